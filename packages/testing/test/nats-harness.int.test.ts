// The harness must give each test file a real, JetStream-enabled nats-server that it can
// kill, pause and restart, and must leave nothing behind.

import { existsSync } from "node:fs";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { type NatsCluster, type NatsServer, startNatsCluster, startNatsServer, waitFor } from "../src/index.ts";

interface JsApiReply {
  error?: { code: number; description: string };
  state?: { messages: number };
  [key: string]: unknown;
}

function msgId(id: string) {
  const h = headers();
  h.set("Nats-Msg-Id", id);
  return h;
}

async function jsApi(nc: NatsConnection, subject: string, body?: unknown): Promise<JsApiReply> {
  const reply = await nc.request(`$JS.API.${subject}`, body === undefined ? "" : JSON.stringify(body), { timeout: 5_000 });
  return reply.json<JsApiReply>();
}

describe("startNatsServer", () => {
  const started: NatsServer[] = [];
  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop()));
  });

  it("starts a JetStream server on a loopback port and removes everything on stop", async () => {
    const server = await startNatsServer();
    started.push(server);
    expect(server.url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
    const nc = await connect({ servers: server.url });
    const info = await jsApi(nc, "INFO");
    expect(info.error).toBeUndefined();
    expect(info.type).toBe("io.nats.jetstream.api.v1.account_info_response");
    await nc.close();
    expect(existsSync(server.storeDir)).toBe(true);
    const pid = server.pid;
    expect(pid).toBeTypeOf("number");
    await server.stop();
    expect(server.running).toBe(false);
    expect(existsSync(server.storeDir)).toBe(false);
    expect(() => process.kill(pid as number, 0)).toThrow();
  });

  it("gives two servers distinct ports and store dirs", async () => {
    const [a, b] = await Promise.all([startNatsServer(), startNatsServer()]);
    started.push(a, b);
    expect(a.port).not.toBe(b.port);
    expect(a.storeDir).not.toBe(b.storeDir);
  });

  it("keeps JetStream data across SIGKILL and restart on the same port", async () => {
    const server = await startNatsServer();
    started.push(server);
    let nc = await connect({ servers: server.url });
    const created = await jsApi(nc, "STREAM.CREATE.H", { name: "H", subjects: ["h.>"], storage: "file" });
    expect(created.error).toBeUndefined();
    const ack = await nc.request("h.one", "payload", { timeout: 5_000 });
    expect(ack.json<{ seq: number }>().seq).toBe(1);
    await nc.close();

    await server.kill("SIGKILL");
    expect(server.running).toBe(false);
    await expect(connect({ servers: server.url, reconnect: false, timeout: 500 })).rejects.toThrow();

    await server.restart();
    nc = await connect({ servers: server.url });
    const info = await jsApi(nc, "STREAM.INFO.H");
    expect(info.state?.messages).toBe(1);
    await nc.close();
  });
});

describe("startNatsCluster", () => {
  let cluster: NatsCluster | undefined;
  afterAll(async () => {
    await cluster?.stop();
  });

  it("runs a 3-node JetStream cluster that survives losing one node", async () => {
    cluster = await startNatsCluster({ nodes: 3 });
    expect(cluster.nodes.map((n) => n.serverName)).toEqual(["n1", "n2", "n3"]);
    const nc = await connect({ servers: [...cluster.servers], maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const created = await jsApi(nc, "STREAM.CREATE.R3", { name: "R3", subjects: ["r3.>"], num_replicas: 3, storage: "file" });
    expect(created.error).toBeUndefined();
    expect((await nc.request("r3.a", "1", { timeout: 5_000 })).json<{ seq: number }>().seq).toBe(1);

    const victim = cluster.nodes[2] as NatsServer;
    await victim.kill("SIGKILL");
    // The survivors may need a leader election first; retry the same message id until it is
    // acknowledged (the id keeps a retry from storing it twice).
    const ack = await waitFor(
      async () => {
        const reply = await nc.request("r3.a", "2", { timeout: 2_000, headers: msgId("second") });
        const body = reply.json<{ seq?: number }>();
        return body.seq;
      },
      { timeoutMs: 30_000, what: "an R3 publish acknowledged by the surviving majority" },
    );
    expect(ack).toBe(2);

    await victim.restart();
    expect(victim.running).toBe(true);
    const info = await jsApi(nc, "STREAM.INFO.R3");
    expect(info.state?.messages).toBe(2);
    await nc.close();
  });
});
