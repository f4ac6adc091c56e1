// Lifecycle of real service processes, as Kubernetes drives it: a service cut off from NATS
// answers /readyz 503 (and 200 again once NATS is back) while /healthz stays 200; the gateway
// on SIGTERM first turns /readyz to 503, keeps serving for SHUTDOWN_DELAY_MS so endpoints can
// drop the pod, and only then closes its listeners and exits.

import { freeLoopbackPort, type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProcessGroup, type ServiceProcess } from "../support/processes.ts";

const SHUTDOWN_DELAY_MS = 3_000;
let nats: NatsServer;
const processes = new ProcessGroup();
let driver: ServiceProcess;
let gateway: ServiceProcess;
let gatewayUrl: string;

const status = (url: string) => fetch(url).then((r) => r.status, () => 0);
const opsUrl = (p: ServiceProcess, path: string) => `http://127.0.0.1:${p.opsPort}${path}`;

beforeAll(async () => {
  nats = await startNatsServer();
  const common = { NATS_URL: nats.url, PARTITION_COUNT: "4" };
  driver = processes.add("driver", "llm-driver", common, await freeLoopbackPort());
  const httpPort = await freeLoopbackPort();
  gatewayUrl = `http://127.0.0.1:${httpPort}`;
  gateway = processes.add(
    "gateway",
    "web-gateway",
    { ...common, HTTP_HOST: "127.0.0.1", HTTP_PORT: String(httpPort), GRPC_PORT: "0", AGENTRT_DEV_MODE: "1", UI_BUILD_ON_START: "0", SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS) },
    await freeLoopbackPort(),
  );
  driver.start();
  gateway.start();
  await Promise.all([driver.waitReady(120_000), gateway.waitReady(120_000)]);
});

afterAll(async () => {
  await processes.stopAll();
  await nats.stop();
});

describe("readiness of service processes", () => {
  it("/readyz turns 503 while NATS is gone and 200 after it returns; /healthz stays 200", async () => {
    await nats.kill("SIGKILL");
    for (const p of [driver, gateway]) {
      await waitFor(async () => (await status(opsUrl(p, "/readyz"))) === 503, { timeoutMs: 20_000, intervalMs: 100 });
      expect(await status(opsUrl(p, "/healthz")), `${p.name} stays live`).toBe(200);
      expect(p.running).toBe(true);
    }
    await nats.restart();
    for (const p of [driver, gateway]) {
      await waitFor(async () => (await status(opsUrl(p, "/readyz"))) === 200, { timeoutMs: 60_000, intervalMs: 100 });
    }
  });
});

describe("gateway shutdown", () => {
  it("on SIGTERM: /readyz 503 while the API still serves, then the listeners close and the process exits", async () => {
    expect(await status(`${gatewayUrl}/v1/openapi.json`)).toBe(200);
    const sentAt = Date.now();
    const exited = gateway.signal("SIGTERM");
    await waitFor(async () => (await status(opsUrl(gateway, "/readyz"))) === 503, { timeoutMs: 2_000, intervalMs: 25 });
    // Not ready, but still serving: requests routed before the endpoint update still succeed.
    expect(await status(`${gatewayUrl}/v1/openapi.json`)).toBe(200);
    expect(Date.now() - sentAt).toBeLessThan(SHUTDOWN_DELAY_MS);
    await exited;
    const exitedAfter = Date.now() - sentAt;
    expect(exitedAfter, "waited out the endpoint-propagation delay").toBeGreaterThanOrEqual(SHUTDOWN_DELAY_MS);
    expect(await status(`${gatewayUrl}/v1/openapi.json`), "listener closed").toBe(0);
    expect(gateway.logs()).not.toMatch(/did not stop in time/);
  });
});
