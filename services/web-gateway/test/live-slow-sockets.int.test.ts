// WebSocket clients that stop reading or vanish, against the gateway over a real socket: a
// subscription's slot (the per-key cap) is held until its socket has closed, not freed when the
// gateway gives up on it. A client that stopped reading never sees the close frame queued behind
// its 8 MiB backlog, so the gateway cuts it off after a grace; a peer that answers no ping is cut
// off at the next heartbeat. Before, a cut-off socket kept its backlog for ws's 30 s close
// timeout while its slot was already free: one read-only key held 75 sockets and 850 MB.

import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";

const reader = testKey([{ prefix: "/agents/slow", verbs: ["read"] }]);
const AGENT = "/agents/slow/big";
const GRACE_MS = 1_500;
const HEARTBEAT_MS = 1_000;
let ts: TestStore;
let gw: TestGateway;
/** When each upgraded connection's server-side socket closed, in order of upgrade. */
const serverSockets: { closedAt?: number }[] = [];

beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, keys: [reader], maxLiveSubscriptionsPerKey: 1, liveTimings: { heartbeatMs: HEARTBEAT_MS, closeGraceMs: GRACE_MS } });
  gw.gateway.server.on("upgrade", (_req, socket: Duplex) => {
    const entry: { closedAt?: number } = {};
    serverSockets.push(entry);
    socket.once("close", () => (entry.closedAt = Date.now()));
  });
  // About 10 MB of history: more than a WebSocket client may fall behind (8 MiB).
  await ts.store.append(AGENT, [{ type: "agent/created", payload: {} }]);
  const content = "x".repeat(800_000);
  for (let i = 0; i < 13; i++) await ts.store.append(AGENT, [{ type: "agents/context-added", payload: { role: "developer", content } }]);
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await ts?.close();
});

const port = () => Number(new URL(gw.url).port);
const enc = encodeURIComponent;

/**
 * Opens a WebSocket by hand; `stall` stops reading after the handshake. Resolves with the socket
 * once upgraded. First waits for the key's one slot: the SSE probe an earlier case ended by
 * aborting it holds the slot until the gateway has seen the abort (late on a loaded machine).
 */
async function rawWebSocket(options: { stall: boolean }): Promise<Socket> {
  const deadline = Date.now() + 10_000;
  while (gw.gateway.liveLimiter.heldBy(`key:${reader.stored.id}`) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return await new Promise((resolve, reject) => {
    const socket = connect(port(), "127.0.0.1");
    socket.on("error", () => {});
    socket.once("data", (data: Buffer) => {
      const status = data.toString("latin1").split("\r\n")[0] ?? "";
      if (!status.includes(" 101 ")) return reject(new Error(`upgrade answered ${status}`));
      if (options.stall) socket.pause();
      resolve(socket);
    });
    socket.write(
      `GET /v1/streams/${enc(AGENT)}/ws?fromOffset=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${reader.apiKey}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
  });
}

/** Polls an SSE subscription of the same key until the gateway gives it the slot: when it did. */
async function slotFreeAt(deadlineMs: number): Promise<number | undefined> {
  while (Date.now() < deadlineMs) {
    const controller = new AbortController();
    const res = await fetch(`${gw.url}/v1/streams/${enc(AGENT)}/subscribe?fromOffset=14`, { headers: { authorization: `Bearer ${reader.apiKey}` }, signal: controller.signal });
    const at = Date.now();
    controller.abort();
    if (res.status === 200) return at;
    expect(res.status).toBe(429);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

describe("a WebSocket's slot", () => {
  it("given a client that stops reading, when it falls 8 MiB behind, then it is cut off after the grace and its slot is free only once its socket has closed", async () => {
    const before = serverSockets.length;
    const stalled = await rawWebSocket({ stall: true });
    try {
      const freeAt = await slotFreeAt(Date.now() + 30_000);
      const closedAt = serverSockets[before]?.closedAt;
      // Then the gateway closed the socket (within the grace, not ws's 30 s), and the slot came back no sooner
      expect(closedAt, "the stalled socket was closed by the gateway").toBeDefined();
      expect(freeAt).toBeDefined();
      expect(freeAt!).toBeGreaterThanOrEqual(closedAt!);
    } finally {
      stalled.destroy();
    }
  }, 60_000);

  it("given a peer that answers no ping, when the next heartbeat comes, then it is cut off and its slot freed", async () => {
    const before = serverSockets.length;
    // Reads everything (so it is not slow) but never answers a ping: a raw socket speaks no WebSocket.
    const silent = await rawWebSocket({ stall: false });
    silent.on("data", () => {});
    try {
      const openedAt = Date.now();
      const freeAt = await slotFreeAt(Date.now() + 20_000);
      const closedAt = serverSockets[before]?.closedAt;
      expect(closedAt, "the silent socket was closed by the gateway").toBeDefined();
      // Two heartbeats: the ping, then the check that it was answered
      expect(closedAt! - openedAt).toBeLessThan(2 * HEARTBEAT_MS + 2_000);
      expect(freeAt!).toBeGreaterThanOrEqual(closedAt!);
    } finally {
      silent.destroy();
    }
  }, 60_000);

  it("given a client that sends 50 000 frames, when the first ends its stream, then the rest are ignored: one cut-off timer, and the gateway's loop stays free", async () => {
    const before = serverSockets.length;
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const flooder = await rawWebSocket({ stall: false });
    flooder.on("data", () => {});
    // A masked text frame of one byte, 50 000 times in one write
    const frame = Buffer.from([0x81, 0x81, 0, 0, 0, 0, 0x78]);
    flooder.write(Buffer.concat(Array.from({ length: 50_000 }, () => frame)));
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const started = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Each frame after the first had added a timer and a close listener: 50 000 of them, and seconds of work at the close
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(process.getActiveResourcesInfo().filter((r) => r === "Timeout").length - timersBefore).toBeLessThan(50);
      await waitForClosed(before);
    } finally {
      flooder.destroy();
    }
  }, 60_000);
});

async function waitForClosed(index: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (serverSockets[index]?.closedAt === undefined) {
    if (Date.now() > deadline) throw new Error("the gateway did not close the flooding socket");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
