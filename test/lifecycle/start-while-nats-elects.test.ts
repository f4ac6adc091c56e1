// Every service started while its NATS cluster cannot answer JetStream (two of three nodes down: no
// meta leader, no stream leaders) waits for it in-process and is serving once the nodes are
// back — it does not exit and leave the restart to its supervisor, whose back-off (Kubernetes:
// 10 s, 20 s, 40 s … 5 min) would keep it down long after NATS answered again. The chaos soak
// saw 42 such start-up exits in one 10-minute run. Meanwhile it answers /healthz (a startup
// probe of 120 s would otherwise restart it into that back-off) and /readyz says it is starting.

import { ensureWorkStreams, STARTING_UP } from "@agentrt/service-kit";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { type NatsCluster, freeLoopbackPort, startNatsCluster, waitFor } from "@agentrt/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProcessGroup, type ServiceName } from "../support/processes.ts";

let cluster: NatsCluster;
const processes = new ProcessGroup();

beforeAll(async () => {
  cluster = await startNatsCluster({ nodes: 3 });
  await cluster.waitForMetaLeader();
  // The streams exist already, as in a running deployment whose nodes restart.
  const nc = await connect({ servers: [...cluster.servers] });
  const store = await JetStreamEventStore.open(nc, { partitionCount: 4, replicas: 3 });
  await ensureWorkStreams(await jetstreamManager(nc), { replicas: 3 });
  await store.close();
  await nc.close();
}, 120_000);

afterAll(async () => {
  await processes.stopAll();
  await cluster?.stop();
});

describe("a service started while NATS cannot answer", () => {
  it("waits for the cluster and serves once it is back, without exiting", async () => {
    // Given two of the three nodes down: the survivor accepts connections but JetStream has no quorum
    const [survivor, ...down] = cluster.nodes;
    for (const node of down) await node!.kill("SIGKILL");
    // ...and the survivor knows it. It names the dead meta leader for 6-9 s more, and if it was
    // the leader itself it answers JetStream as one meanwhile: a service started then could open
    // everything and never wait (the CI run of 2026-12-02 17:10: the gateway never said it waited).
    await waitFor(async () => (await survivorMetaLeader(survivor!.monitorPort)) === "", { timeoutMs: 30_000, intervalMs: 200, what: "the survivor to have no meta leader" });
    // When every service starts against the survivor (each waits at its first JetStream step:
    // the host's and the gateway's is opening the event store)
    const started = (["llm-driver", "agent-reducer", "capability-host", "web-gateway"] as ServiceName[]).map(async (service) =>
      processes
        .add(service, service, {
          NATS_URL: survivor!.url,
          OPS_PORT: "0",
          PARTITION_COUNT: "4",
          NATS_STREAM_REPLICAS: "3",
          OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
          OPENAI_API_KEY: "test-key",
          LOG_LEVEL: "warn",
          ...(service === "web-gateway" ? { HTTP_PORT: String(await freeLoopbackPort()), GRPC_PORT: "0", HTTP_HOST: "127.0.0.1", AGENTRT_DEV_MODE: "1" } : {}),
        }, await freeLoopbackPort(), undefined, { fromBundle: true })
        .start(),
    );
    const services = await Promise.all(started);
    // ...and the cluster stays without quorum until each has found that out (a NATS request
    // waits 5 s) and a few seconds more
    const silent = () => services.filter((p) => p.running && !/NATS is not answering yet; waiting for it/.test(p.logs()));
    await waitFor(() => silent().length === 0, { timeoutMs: 60_000, intervalMs: 250, what: "each service to say it waits for NATS" }).catch((error: unknown) => {
      throw new Error(`${String(error)}; not yet: ${silent().map((p) => `${p.name}:\n${p.logs().slice(-1500)}`).join("\n")}`);
    });
    await new Promise((r) => setTimeout(r, 3_000));
    for (const p of services) expect(p.running, `${p.name} still running while NATS cannot answer:\n${p.logs().slice(-2000)}`).toBe(true);
    // ...alive meanwhile, so a startup or liveness probe does not kill it, and not ready
    for (const p of services) {
      expect(await p.healthz(), `${p.name} /healthz while it waits for NATS`).toBe(200);
      const readyz = await fetch(`http://127.0.0.1:${p.opsPort}/readyz`);
      expect([readyz.status, await readyz.text()], p.name).toEqual([503, `not ready; unmet: ${STARTING_UP}\n`]);
    }
    for (const node of down) await node!.restart();
    // Then each becomes ready in the same process
    for (const p of services) await p.waitReady(90_000);
    for (const p of services) expect(p.exitCount, `${p.name} exited on the way`).toBe(0);
  }, 180_000);
});

/** The meta leader the node names (`/jsz`); empty when it has none. */
async function survivorMetaLeader(monitorPort: number): Promise<string> {
  const jsz = (await (await fetch(`http://127.0.0.1:${monitorPort}/jsz`)).json()) as { meta_cluster?: { leader?: string } };
  return jsz.meta_cluster?.leader ?? "";
}
