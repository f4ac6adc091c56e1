// A read-only key opens live subscriptions (server-sent events) from offset 1 on a stream of
// large events and then reads nothing. The gateway used to read each such client's whole history
// into memory at once (its history pages went into the client's queue without waiting for the
// client to take them): a few such connections on a stream of a few hundred MB were enough to
// exhaust its heap. Now a client's history is read a page (at most 1 MiB) at a time, once it has
// taken the page before: the gateway's memory stays flat, it keeps answering, and a client that
// reads on still gets every event, in order.

import { request } from "node:http";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AuthSystem, startAuthSystem } from "./support/auth-system.ts";

const BIG_EVENTS = 120;
const EVENT_CHARS = 850_000;
const STALLED_READERS = 6;
const bigPath = "/slow/big/stream";

let system: AuthSystem;

beforeAll(async () => {
  system = await startAuthSystem({ reader: { prefix: "/slow", verbs: ["read"] } });
  // One ~850 kB event per batch: ~102 MB of events, which each stalled reader used to hold whole.
  for (let i = 0; i < BIG_EVENTS; i++) {
    await system.store.append(bigPath, [{ type: "agents/context-added", payload: { role: "system", content: `${i}:${"x".repeat(EVENT_CHARS)}` } }]);
  }
}, 300_000);

afterAll(async () => {
  await system?.stop();
});

function gatewayRssMb(): number {
  const pid = system.processes.byService("web-gateway")[0]?.pid;
  if (pid === undefined) throw new Error("no gateway process");
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb) / 1024;
}

/** Opens the SSE subscription from offset 1; resolves with the response once its head arrived. */
function openSse(): Promise<{ res: import("node:http").IncomingMessage; close(): void }> {
  const url = new URL(`${system.gatewayUrl}/v1/streams/${encodeURIComponent(bigPath)}/subscribe?fromOffset=1`);
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${system.keys.reader}` } }, (res) => resolve({ res, close: () => req.destroy() }));
    req.on("error", reject);
    req.end();
  });
}

it("clients that stop reading a stream of large events hold a page each, not the stream, and one that reads on gets every event", async () => {
  const before = gatewayRssMb();
  // When several clients open the stream from offset 1 and read nothing
  const stalled = await Promise.all(Array.from({ length: STALLED_READERS }, () => openSse()));
  for (const s of stalled) {
    expect(s.res.statusCode).toBe(200);
    s.res.pause();
  }
  // Then, given time to read whatever it would, the gateway has grown by far less than one copy
  // of the stream per client, and it still answers. Measured before this change: +750 MB (and
  // +440 MB on a stream half as long: it grew with the stream and the readers); after, +135 MB:
  // ~50 MB for the first large read plus ~11 MB a reader (its page, the store's pull, the frame),
  // whatever the stream's length.
  let peak = before;
  for (let t = 0; t < 20; t++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    peak = Math.max(peak, gatewayRssMb());
  }
  const health = await fetch(`${system.gatewayUrl}/v1/streams/${encodeURIComponent(bigPath)}/events?fromOffset=1&limit=1`, { headers: { authorization: `Bearer ${system.keys.reader}` } });
  expect(health.status).toBe(200);
  await health.arrayBuffer();
  process.stdout.write(`slow live readers: gateway RSS ${before.toFixed(0)} MB before, ${peak.toFixed(0)} MB at most with ${STALLED_READERS} stalled readers of a ${((BIG_EVENTS * EVENT_CHARS) / 1e6).toFixed(0)} MB stream\n`);
  expect(peak - before).toBeLessThan(250);

  // And a stalled client that reads on gets every offset, each once, in order
  const [first, ...rest] = stalled;
  for (const s of rest) s.close();
  const ids: number[] = [];
  let buffered = "";
  await new Promise<void>((resolve, reject) => {
    first!.res.setEncoding("utf8");
    first!.res.on("data", (chunk: string) => {
      buffered += chunk;
      let cut = buffered.indexOf("\n\n");
      while (cut >= 0) {
        const id = /^id: (\d+)$/m.exec(buffered.slice(0, cut))?.[1];
        if (id !== undefined) ids.push(Number(id));
        buffered = buffered.slice(cut + 2);
        cut = buffered.indexOf("\n\n");
      }
      if (ids.length >= BIG_EVENTS) resolve();
    });
    first!.res.on("error", reject);
    first!.res.resume();
  });
  first!.close();
  expect(ids).toEqual(Array.from({ length: BIG_EVENTS }, (_, k) => k + 1));
  const gateway = system.processes.byService("web-gateway")[0]!;
  expect({ running: gateway.running, exits: gateway.exitCount }).toEqual({ running: true, exits: 0 });
}, 120_000);
