// Bounded reads at the gateway (issue 11): an event over MAX_EVENT_BYTES is a 413 naming the
// limit, the event's index and type; a read page stops at MAX_READ_PAGE_BYTES and nextOffset
// continues; a listing page stops once its folds cost MAX_LIST_FOLD_BYTES and `next` continues;
// and a read or a fold stops pulling from NATS when its HTTP client goes away.

import { request } from "node:http";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { connectNats, type NatsConnection } from "@agentrt/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Authenticator } from "../src/auth/authenticator.ts";
import { gatewayCore } from "../src/core.ts";
import { createHttpGateway, type HttpGateway } from "../src/gateway.ts";
import { enc, http } from "./support/http.ts";
import { openTestStore, type TestStore } from "./support/store.ts";
import { testLogger, userMessage } from "@agentrt/testing";

const LIMITS = { maxEventBytes: 50_000, maxPageBytes: 100_000, maxListFoldBytes: 100_000 };
const BIG = 30_000;

let ts: TestStore;
let readNc: NatsConnection;
let readStore: JetStreamEventStore;
let gateway: HttpGateway;
let url: string;

beforeAll(async () => {
  ts = await openTestStore();
  readNc = await connectNats({ url: ts.nats.url, name: "gateway-reads-test" });
  readStore = await JetStreamEventStore.open(readNc);
  const auth = new Authenticator({ keys: [], devMode: true, defaultRateLimit: { perSecond: 1000, burst: 1000 }, nowMs: Date.now });
  gateway = createHttpGateway({ store: ts.store, readStore, limits: LIMITS, core: gatewayCore(), auth, log: testLogger("bounded-reads-test") });
  url = `http://127.0.0.1:${await gateway.listen(0, "127.0.0.1")}`;
});
afterAll(async () => {
  await gateway?.close();
  await readStore?.close();
  await readNc?.drain();
  await ts?.close();
});

let n = 0;
const fresh = (name: string) => `/agents/bounded/${name}-${++n}`;
const born = { type: "agent/created", payload: {} };
const big = (i: number, size = BIG) => userMessage(`${i}:${"x".repeat(size)}`);

async function seed(path: string, events: unknown[]): Promise<void> {
  for (let i = 0; i < events.length; i += 20) {
    const res = await http(url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: events.slice(i, i + 20) } });
    expect(res.status).toBe(200);
  }
}

describe("event size", () => {
  it("refuses an event over MAX_EVENT_BYTES with a 413 naming the limit, the index and the type, committing nothing", async () => {
    const path = fresh("size");
    await seed(path, [born]);
    const res = await http(url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [userMessage("fine"), big(1, 60_000)] } });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("event_too_large");
    expect(res.body.error.details).toMatchObject({ index: 1, type: "agents/context-added", maxEventBytes: LIMITS.maxEventBytes });
    expect(res.body.error.message).toContain("events[1]");
    expect(await ts.store.lastOffset(path)).toBe(1);
    // Just under the limit is fine.
    expect((await http(url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [big(2, 40_000)] } })).status).toBe(200);
  });
});

describe("read pages", () => {
  it("a page of limit=1000 stops at MAX_READ_PAGE_BYTES; nextOffset continues until every event was read once", async () => {
    const path = fresh("page");
    await seed(path, [born, ...Array.from({ length: 10 }, (_, i) => big(i))]);
    const offsets: number[] = [];
    let from = 1;
    let pages = 0;
    for (;;) {
      const res = await http(url, "GET", `/v1/streams/${enc(path)}/events?fromOffset=${from}&limit=1000`);
      expect(res.status).toBe(200);
      expect(res.body.lastOffset).toBe(11);
      if (res.body.events.length === 0) break;
      pages++;
      expect(Buffer.byteLength(JSON.stringify(res.body.events))).toBeLessThanOrEqual(LIMITS.maxPageBytes + 1_000);
      offsets.push(...res.body.events.map((e: { offset: number }) => e.offset));
      from = res.body.nextOffset;
    }
    expect(offsets).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    expect(pages).toBeGreaterThanOrEqual(4);
  });
});

describe("listings", () => {
  it("a listing page stops once its folds read MAX_LIST_FOLD_BYTES; `next` continues; limit pages too", async () => {
    const root = fresh("list");
    for (const name of ["a", "b", "c"]) await seed(`${root}/${name}`, [born, big(1), big(2)]);
    const first = await http(url, "GET", `/v1/agents?prefix=${enc(`${root}/`)}`);
    expect(first.status).toBe(200);
    expect(first.body.agents.map((a: { streamPath: string }) => a.streamPath)).toEqual([`${root}/a`, `${root}/b`]);
    expect(first.body.next).toBe(`${root}/b`);
    const second = await http(url, "GET", `/v1/agents?prefix=${enc(`${root}/`)}&after=${enc(first.body.next)}`);
    expect(second.body.agents.map((a: { streamPath: string }) => a.streamPath)).toEqual([`${root}/c`]);
    expect(second.body.next).toBeUndefined();
    // Folded states are cached: a second listing costs no folds and fits in one page.
    const again = await http(url, "GET", `/v1/agents?prefix=${enc(`${root}/`)}`);
    expect(again.body.agents).toHaveLength(3);
    const one = await http(url, "GET", `/v1/agents?prefix=${enc(`${root}/`)}&limit=1`);
    expect(one.body.agents.map((a: { streamPath: string }) => a.streamPath)).toEqual([`${root}/a`]);
    expect(one.body.next).toBe(`${root}/a`);
  });
});

describe("client disconnect", () => {
  const RECORDS = 300;
  const EVENT = 45_000;
  let path: string;
  beforeAll(async () => {
    path = fresh("abort");
    await ts.store.append(path, [born]);
    for (let i = 0; i < RECORDS; i++) await ts.store.append(path, [big(i, EVENT)]);
  }, 120_000);

  /** Starts a GET, hangs up once the gateway's read connection has pulled `after` bytes; returns bytes pulled in all. */
  async function hangUpDuring(target: string, after: number): Promise<{ atHangUp: number; total: number }> {
    const start = readNc.stats().inBytes;
    let atHangUp = -1;
    await new Promise<void>((resolve) => {
      const req = request(`${url}${target}`, { method: "GET" });
      req.on("error", () => resolve());
      req.on("response", () => resolve());
      req.end();
      const watch = setInterval(() => {
        if (readNc.stats().inBytes - start > after) {
          clearInterval(watch);
          atHangUp = readNc.stats().inBytes - start;
          req.destroy();
        }
      }, 1);
    });
    await new Promise((resolve) => setTimeout(resolve, 500)); // whatever is still coming arrives now
    return { atHangUp, total: readNc.stats().inBytes - start };
  }

  it("a big read stops pulling from NATS when its client hangs up", async () => {
    const streamBytes = RECORDS * EVENT;
    // A page budget large enough that only the hang-up can stop this read early.
    const unbounded = createHttpGateway({
      store: ts.store,
      readStore,
      limits: { ...LIMITS, maxPageBytes: 1_000_000_000 },
      core: gatewayCore(),
      auth: new Authenticator({ keys: [], devMode: true, defaultRateLimit: { perSecond: 1000, burst: 1000 }, nowMs: Date.now }),
      log: testLogger("bounded-reads-test"),
    });
    const port = await unbounded.listen(0, "127.0.0.1");
    try {
      const saved = url;
      url = `http://127.0.0.1:${port}`;
      const { atHangUp, total } = await hangUpDuring(`/v1/streams/${enc(path)}/events?limit=1000`, 1_000_000);
      url = saved;
      expect(atHangUp).toBeGreaterThan(0);
      expect(total).toBeLessThan(streamBytes / 2);
      // After the hang-up, at most the rest of the one pull in flight (IN_FLIGHT_BYTES).
      expect(total - atHangUp).toBeLessThan(4 * 1_048_576 + 500_000);
    } finally {
      await unbounded.close();
    }
  });

  it("a state fold stops pulling from NATS when its client hangs up", async () => {
    const streamBytes = RECORDS * EVENT;
    const { atHangUp, total } = await hangUpDuring(`/v1/agents/${enc(path)}/state`, 1_000_000);
    expect(atHangUp).toBeGreaterThan(0);
    expect(total).toBeLessThan(streamBytes / 2);
  });
});

describe("folds kept between requests", () => {
  /** A gateway on the shared stores with its own limits; its reads go through `readStore`. */
  async function gatewayWith(limits: Partial<typeof LIMITS & { maxCachedStateBytes: number }>, reads: JetStreamEventStore = readStore) {
    const g = createHttpGateway({
      store: ts.store,
      readStore: reads,
      limits: { ...LIMITS, ...limits },
      core: gatewayCore(),
      auth: new Authenticator({ keys: [], devMode: true, defaultRateLimit: { perSecond: 1000, burst: 1000 }, nowMs: Date.now }),
      log: testLogger("bounded-reads-test"),
    });
    return { g, url: `http://127.0.0.1:${await g.listen(0, "127.0.0.1")}` };
  }

  /** The read store, recording the events and the JSON bytes of every page it returns. */
  function recordingReads(): { reads: { events: number; pageBytes: number[] }; recording: JetStreamEventStore } {
    const reads = { events: 0, pageBytes: [] as number[] };
    const recording = new Proxy(readStore, {
      get(target, key, receiver) {
        if (key !== "read") return Reflect.get(target, key, receiver);
        return async (...args: Parameters<JetStreamEventStore["read"]>) => {
          const events = await target.read(...args);
          reads.events += events.length;
          if (events.length > 0) reads.pageBytes.push(Buffer.byteLength(JSON.stringify(events)));
          return events;
        };
      },
    });
    return { reads, recording };
  }

  it("keeps folded states up to STATE_CACHE_BYTES: the least recently used is folded again, and one folded from more is never kept", async () => {
    // Given three agents of ~60 kB of events each, and a gateway that keeps 150 kB of folds
    const root = fresh("cache");
    const paths = ["a", "b", "c"].map((name) => `${root}/${name}`);
    for (const path of paths) await seed(path, [born, big(1), big(2)]);
    const { reads, recording } = recordingReads();
    const { g, url: base } = await gatewayWith({ maxCachedStateBytes: 150_000 }, recording);
    try {
      /** How many events the gateway read from the store to answer a state read. */
      const foldedFor = async (path: string) => {
        const before = reads.events;
        const res = await http(base, "GET", `/v1/agents/${enc(path)}/state`);
        expect(res.status).toBe(200);
        return reads.events - before;
      };
      // When each agent's state is read once
      for (const path of paths) expect(await foldedFor(path)).toBe(3);
      // Then the two read last are kept: read again, nothing new is folded
      expect(await foldedFor(paths[2]!)).toBe(0);
      expect(await foldedFor(paths[1]!)).toBe(0);
      // And the first, dropped to stay within the bound, is folded again
      expect(await foldedFor(paths[0]!)).toBe(3);

      // And an agent folded from more than the bound alone is folded again on every read
      const large = `${root}/large`;
      await seed(large, [born, ...Array.from({ length: 6 }, (_, i) => big(i))]);
      expect(await foldedFor(large)).toBe(7);
      expect(await foldedFor(large)).toBe(7);
    } finally {
      await g.close();
    }
  });

  it("audits a stream one bounded page at a time, not by reading it whole", async () => {
    const path = fresh("audit");
    await seed(path, [born, ...Array.from({ length: 10 }, (_, i) => big(i))]);
    const { reads, recording } = recordingReads();
    const { g, url: base } = await gatewayWith({}, recording);
    const pages = reads.pageBytes;
    try {
      const res = await http(base, "GET", `/v1/agents/${enc(path)}/audit`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ streamPath: path, events: 11, firstOffset: 1, lastOffset: 11 });
      // Every read was at most a page (plus the event that crossed it), and it took several
      expect(pages.length).toBeGreaterThanOrEqual(4);
      for (const bytes of pages) expect(bytes).toBeLessThanOrEqual(LIMITS.maxPageBytes + BIG + 1_000);
    } finally {
      await g.close();
    }
  });
});
