// MAX_CONNECTIONS: each listener (HTTP, gRPC) holds at most so many connections at once. A
// connection past the cap is closed as it arrives, before a byte of a request is read, and once
// one closes a new one is served again. Without the cap (grpc-js's own listener, node's default)
// every one of them stays open until a timeout, spending a file descriptor and a session each.
// A silent connection cannot hold a slot for good: gRPC's, like HTTP's, is closed when it sends
// nothing for its first-byte time.

import { request } from "node:http";
import { connect as tcp, type Socket } from "node:net";
import { credentials, Metadata, type ServiceError } from "@grpc/grpc-js";
import { AgentRuntimeClient } from "@agentrt/gateway-proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";

const MAX = 4;
const key = testKey([{ prefix: "/agents/cap", verbs: ["read"] }]);
let ts: TestStore;
let gw: TestGateway;

beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, keys: [key], grpc: true, maxConnections: MAX, grpcFirstByteMs: 1_000 });
});
afterAll(async () => {
  await gw?.close();
  await ts?.close();
});

/** A raw connection that sends nothing, and what became of it within `waitMs`: "open" or "closed". */
async function idleConnection(port: number): Promise<{ socket: Socket; fate: (waitMs: number) => Promise<"open" | "closed"> }> {
  const socket = tcp({ host: "127.0.0.1", port });
  socket.on("error", () => {});
  // What the server sends (HTTP/2's settings) is read and dropped, so its close is seen.
  socket.resume();
  let closed = false;
  socket.on("close", () => (closed = true));
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  return {
    socket,
    fate: async (waitMs) => {
      const deadline = Date.now() + waitMs;
      while (!closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      return closed ? "closed" : "open";
    },
  };
}

const httpStatus = (url: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const req = request(`${url}/v1/streams/${encodeURIComponent("/agents/cap/a")}/events`, { agent: false, headers: { authorization: `Bearer ${key.apiKey}` } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });

/**
 * Fills the listener at `port` to its cap with silent connections, shows one more is closed as it
 * arrives while the others stay open, then frees one slot. Returns the connections still held.
 */
async function fillToCapThenFreeOne(port: number): Promise<Socket[]> {
  const held = await Promise.all(Array.from({ length: MAX }, () => idleConnection(port)));
  const extra = await idleConnection(port);
  expect(await extra.fate(2_000)).toBe("closed");
  for (const h of held) expect(await h.fate(0)).toBe("open");
  held[0]!.socket.destroy();
  await new Promise((r) => setTimeout(r, 100));
  return held.slice(1).map((h) => h.socket);
}

/** One gRPC read with the test's key, on a client of its own: its status code (0 = OK). */
async function grpcRead(): Promise<number> {
  const client = new AgentRuntimeClient(gw.grpcAddress, credentials.createInsecure());
  const md = new Metadata();
  md.set("authorization", `Bearer ${key.apiKey}`);
  try {
    return await new Promise<number>((resolve) =>
      client.readEvents({ streamPath: "/agents/cap/a", fromOffset: 1, limit: 1 }, md, (e: ServiceError | null) => resolve(e?.code ?? 0)),
    );
  } finally {
    client.close();
  }
}

describe("the most connections a listener holds", () => {
  it("HTTP: one past the cap is closed as it arrives; after one closes, requests are served again", async () => {
    const held = await fillToCapThenFreeOne(Number(new URL(gw.url).port));
    try {
      expect(await httpStatus(gw.url)).toBe(200);
    } finally {
      for (const socket of held) socket.destroy();
    }
  });

  it("gRPC: one past the cap is closed as it arrives; after one closes, calls are served again", async () => {
    const held = await fillToCapThenFreeOne(Number(gw.grpcAddress.split(":")[1]));
    try {
      expect(await grpcRead()).toBe(0);
    } finally {
      for (const socket of held) socket.destroy();
    }
  });

  it("gRPC: a connection that sends nothing is closed after its first-byte time, so silent clients cannot hold the slots", async () => {
    const port = Number(gw.grpcAddress.split(":")[1]);
    const silent = await Promise.all(Array.from({ length: MAX }, () => idleConnection(port)));
    const started = Date.now();
    for (const s of silent) expect(await s.fate(5_000)).toBe("closed");
    expect(Date.now() - started).toBeGreaterThanOrEqual(800);
    // A client that spoke keeps its connection past that time.
    const client = new AgentRuntimeClient(gw.grpcAddress, credentials.createInsecure());
    const md = new Metadata();
    md.set("authorization", `Bearer ${key.apiKey}`);
    const read = () => new Promise<number>((resolve) => client.readEvents({ streamPath: "/agents/cap/a", fromOffset: 1, limit: 1 }, md, (e: ServiceError | null) => resolve(e?.code ?? 0)));
    try {
      expect(await read()).toBe(0);
      await new Promise((r) => setTimeout(r, 1_500));
      expect(await read()).toBe(0);
    } finally {
      client.close();
    }
  });
});
