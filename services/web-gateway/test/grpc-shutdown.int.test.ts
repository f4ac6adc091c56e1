// Stopping the gRPC server with a client subscribed: a live Subscribe never finishes on its own,
// so grpc-js's tryShutdown alone waited for the process's stop deadline (10 s, then an exit
// code of 1). shutdownGrpc gives calls in flight a grace, then cancels the rest.

import { credentials, Metadata, type ServiceError } from "@grpc/grpc-js";
import { AgentRuntimeClient } from "@agentrt/gateway-proto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { shutdownGrpc } from "../src/grpc/server.ts";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";

const key = testKey([{ prefix: "/agents/stop", verbs: ["read", "append"] }]);
let ts: TestStore;
let gw: TestGateway;

beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, keys: [key], grpc: true });
});
afterAll(async () => {
  await gw?.close();
  await ts?.close();
});

it("given a subscribed client, when the server stops, then its stream is cancelled after the grace and the stop completes", async () => {
  const path = "/agents/stop/a";
  await ts.store.append(path, [{ type: "agent/created", payload: {} }]);
  const client = new AgentRuntimeClient(gw.grpcAddress, credentials.createInsecure());
  const md = new Metadata();
  md.set("authorization", `Bearer ${key.apiKey}`);
  const stream = client.subscribe({ streamPath: path, fromOffset: 1, ephemeral: false }, md);
  const first = new Promise<void>((resolve) => stream.once("data", () => resolve()));
  const ended = new Promise<number>((resolve) => {
    stream.on("error", (e: ServiceError) => resolve(e.code));
    stream.on("end", () => resolve(-1));
  });
  await first;
  try {
    const started = Date.now();
    await shutdownGrpc(gw.grpcServer!, 300);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(3_000);
    expect(await Promise.race([ended, new Promise((r) => setTimeout(() => r("still open"), 3_000))])).not.toBe("still open");
  } finally {
    client.close();
  }
});
