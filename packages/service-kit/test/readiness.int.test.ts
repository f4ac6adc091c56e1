// /readyz against a real nats-server: 503 while the connection is down (the client keeps
// reconnecting, so "not closed" would still say ready), 200 again after the server returns;
// /healthz stays 200 throughout; a failing service check and shutdown also answer 503, and
// each 503 names the conditions that do not hold.

import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type NatsServer, startNatsServer, testLogger, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats, consumeWork, createMetrics, ensureWorkStreams, startOpsServer, trackReadiness, type NatsConnection, type OpsServer } from "../src/index.ts";

const logger = testLogger("test");
let server: NatsServer;
let nc: NatsConnection;
const ops: OpsServer[] = [];

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connectNats({ url: server.url, name: "readiness-test" });
});

afterAll(async () => {
  for (const o of ops) await o.close();
  await nc.close().catch(() => undefined);
  await server.stop();
});

async function serve(unmet: () => readonly string[]): Promise<string> {
  const o = await startOpsServer({ host: "127.0.0.1", port: 0, metrics: createMetrics("readiness-test", { collectDefaults: false }), unmet });
  ops.push(o);
  return `http://127.0.0.1:${o.port}`;
}

const status = async (url: string) => (await fetch(url)).status;
const answer = async (url: string) => {
  const response = await fetch(url);
  return `${response.status} ${await response.text()}`;
};

describe("readiness follows the NATS connection", () => {
  it("answers 503 while NATS is gone and 200 once it is back; /healthz stays 200", async () => {
    const readiness = trackReadiness(nc);
    const base = await serve(readiness.unmet);
    expect(await answer(`${base}/readyz`)).toBe("200 ready\n");

    await server.kill("SIGKILL");
    await waitFor(async () => (await status(`${base}/readyz`)) === 503, { timeoutMs: 15_000, intervalMs: 50 });
    expect(await answer(`${base}/readyz`)).toBe("503 not ready; unmet: NATS connected\n");
    expect(nc.isClosed(), "the client is reconnecting, not closed").toBe(false);
    expect(await status(`${base}/healthz`)).toBe(200);

    await server.restart();
    await waitFor(async () => (await status(`${base}/readyz`)) === 200, { timeoutMs: 30_000, intervalMs: 50 });
    expect(readiness.natsConnected()).toBe(true);
  });

  it("answers 503 naming the service check that fails or throws, and from markStopping on", async () => {
    let consuming = true;
    const readiness = trackReadiness(nc, { "work consumer running": () => consuming, "cache warm": () => true });
    const base = await serve(readiness.unmet);
    expect(await status(`${base}/readyz`)).toBe(200);
    consuming = false;
    expect(await answer(`${base}/readyz`)).toBe("503 not ready; unmet: work consumer running\n");
    consuming = true;
    const throwing = trackReadiness(nc, {
      "lease held": () => {
        throw new Error("boom");
      },
    });
    expect(throwing.ready()).toBe(false);
    expect(throwing.unmet()).toEqual(["lease held"]);
    readiness.markStopping();
    expect(await answer(`${base}/readyz`)).toBe("503 not ready; unmet: stopping\n");
  });

  it("answers 503 naming the probe when the probe itself throws", async () => {
    const base = await serve(() => {
      throw new Error("no lease table");
    });
    expect(await answer(`${base}/readyz`)).toBe("503 not ready; unmet: the readiness probe (it threw: no lease table)\n");
  });

  it("a work consumer is running while it fetches, and not after stop()", async () => {
    const jsm = await jetstreamManager(nc);
    await ensureWorkStreams(jsm);
    const consumer = await consumeWork(jetstream(nc), jsm, { kind: "script", durable: "readiness", logger, handler: async () => ({ type: "ack" }) });
    expect(consumer.running()).toBe(true);
    await consumer.stop();
    expect(consumer.running()).toBe(false);
  });
});
