// The shared live follower against a tiny real HTTP/WebSocket server that speaks the gateway's
// resume rules: SSE frames split across writes come out whole, a dropped SSE follower resumes
// with Last-Event-ID, a dropped WebSocket follower with fromOffset = last + 1, and a refusal is
// reported as its status.

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { checkSequence, collectLive, followLive, freeLoopbackPort, liveUrl, waitFor } from "../src/index.ts";

const PATH = "/agents/live/follower";
// Which connections the server saw, by transport: a previous test's follower, closed while its
// last reconnection was still in flight, can reach the server after the next test has started.
const seen: { transport: "sse" | "ws"; lastEventId: string | undefined; fromOffset: string | null }[] = [];
let server: Server;
let base: string;

/** Offsets 1..3 per connection, after whatever the follower says it holds; then the server hangs up. */
const batchAfter = (held: number) => [held + 1, held + 2, held + 3];

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.searchParams.get("refuse") === "1") return void res.writeHead(429).end();
    const lastEventId = req.headers["last-event-id"] as string | undefined;
    seen.push({ transport: "sse", lastEventId, fromOffset: url.searchParams.get("fromOffset") });
    res.writeHead(200, { "content-type": "text/event-stream" });
    const held = lastEventId === undefined ? 0 : Number(lastEventId);
    // One frame split over two writes, a heartbeat comment, an ephemeral frame without an id.
    const frames = batchAfter(held).map((o) => `id: ${o}\ndata: ${JSON.stringify({ offset: o })}\n\n`);
    res.write(frames[0]!.slice(0, 7));
    res.write(frames[0]!.slice(7) + ": heartbeat\n\n" + `data: ${JSON.stringify({ ephemeral: true })}\n\n`);
    res.end(frames[1]! + frames[2]!);
  });
  const wss = new WebSocketServer({ server });
  wss.on("connection", (socket, req) => {
    const from = Number(new URL(req.url ?? "/", "http://x").searchParams.get("fromOffset") ?? "1");
    seen.push({ transport: "ws", lastEventId: undefined, fromOffset: String(from) });
    for (const o of batchAfter(from - 1)) socket.send(JSON.stringify({ offset: o }));
    socket.send(JSON.stringify({ ephemeral: true, offset: 99 }));
    socket.close();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("followLive", () => {
  it.each(["sse", "ws"] as const)("%s: resumes after each drop from the last durable offset, with no gap or duplicate", async (transport) => {
    seen.length = 0;
    const follower = followLive(transport, liveUrl(base, transport, PATH, { fromOffset: 1 }), { reconnectAfterMs: 10 });
    try {
      expect(await follower.opened).toBe(transport === "sse" ? 200 : 101);
      await waitFor(() => follower.received.length >= 9, { timeoutMs: 5_000, what: "three connections' offsets" });
      follower.close();
      const nine = follower.received.slice(0, 9);
      expect(nine).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(checkSequence(nine, 9)).toEqual({ gaps: 0, duplicates: 0 });
      expect(follower.resumes.slice(0, 3)).toEqual([0, 3, 6]);
      expect(follower.reconnects).toBeGreaterThanOrEqual(2);
      const connections = seen.filter((s) => s.transport === transport).slice(0, 3);
      if (transport === "sse") expect(connections.map((s) => s.lastEventId)).toEqual([undefined, "3", "6"]);
      else expect(connections.map((s) => s.fromOffset)).toEqual(["1", "4", "7"]);
      // The ephemeral message is kept but carries no durable offset.
      expect(follower.messages.some((m) => m.data.ephemeral === true && m.offset === undefined)).toBe(true);
    } finally {
      follower.close();
    }
  });

  it("reports a refused subscription by its status, with no messages", async () => {
    expect(await collectLive("sse", `${base}/x?refuse=1`, () => true)).toEqual({ status: 429, messages: [] });
  });

  it("until() fails at its deadline saying how far it got", async () => {
    const follower = followLive("sse", liveUrl(base, "sse", PATH));
    try {
      await expect(follower.until((m) => m.length > 100, { timeoutMs: 300, what: "a hundred messages" })).rejects.toThrow(/a hundred messages with 4 messages/);
    } finally {
      follower.close();
    }
  });
  it("backs off while a gateway is down instead of retrying every 100 ms", async () => {
    // Given nothing listening where the follower connects (a gateway being restarted)
    const port = await freeLoopbackPort();
    for (const transport of ["sse", "ws"] as const) {
      const follower = followLive(transport, liveUrl(`http://127.0.0.1:${port}`, transport, PATH, { fromOffset: 1 }), { reconnectAfterMs: 100, maxReconnectAfterMs: 800 });
      // When it keeps failing for 2 s
      await new Promise((r) => setTimeout(r, 2_000));
      follower.close();
      // Then it tried a handful of times (waits of 0.1, 0.2, 0.4, 0.8, 0.8 s…), not twenty
      expect(follower.reconnects, transport).toBeGreaterThanOrEqual(3);
      expect(follower.reconnects, transport).toBeLessThanOrEqual(6);
    }
  });
});
