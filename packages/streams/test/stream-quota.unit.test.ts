// The per-agent stream quota: appends from outside the machinery are judged by the usage counted
// from the stream itself (every writer's events), each event is read once for counting, and the
// count is shared through the ledger.

import { describe, expect, it } from "vitest";
import { type EventStore, jsonBytes, MemoryEventStore, MemoryUsageLedger, quotaStore, StreamQuota, tenantOf, type UsageLedger } from "../src/index.ts";
import { chunk, note } from "./event-store-suite.ts";

const PATH = "/agents/quota/a";

/** The store, counting the events its reads return. */
function countingReads(store: MemoryEventStore): { reads: Pick<EventStore, "read" | "lastOffset">; eventsRead: () => number } {
  let read = 0;
  return {
    reads: {
      read: async (path, options) => {
        const events = await store.read(path, options);
        read += events.length;
        return events;
      },
      lastOffset: (path) => store.lastOffset(path),
    },
    eventsRead: () => read,
  };
}

/** A ledger in memory whose every answer takes `delayMs`. */
function slowLedger(delayMs: number): UsageLedger {
  const inner = new MemoryUsageLedger();
  const later = <T>(answer: () => Promise<T>) => new Promise<void>((resolve) => setTimeout(resolve, delayMs)).then(answer);
  return {
    get: (path) => later(() => inner.get(path)),
    put: (path, usage, revision) => later(() => inner.put(path, usage, revision)),
    tenant: (prefix) => later(() => inner.tenant(prefix)),
    putTenant: (prefix, usage, revision) => later(() => inner.putTenant(prefix, usage, revision)),
  };
}

describe("a stream held to its quota", () => {
  it("given a stream at its quota of events, when a key appends one more, then it is refused naming the usage and the quota, and nothing is stored", async () => {
    const store = new MemoryEventStore();
    const quota = new StreamQuota(store, { limits: { events: 3 } });
    const held = quotaStore(store, quota);
    await held.append(PATH, [note("1"), note("2")]);
    await quota.idle();
    await held.append(PATH, [note("3")]);
    await quota.idle();

    const refused = held.append(PATH, [note("4")]);

    await expect(refused).rejects.toMatchObject({
      code: "quota_exceeded",
      message: expect.stringContaining(`${PATH} holds 3 events of `),
      details: { streamPath: PATH, events: 3, quotaEvents: 3 },
    });
    await expect(refused).rejects.toThrow(/would pass its quota of 3 events and 1073741824 bytes\. Nothing was appended\./);
    expect(await store.lastOffset(PATH)).toBe(3);
  });

  it("given a quota in bytes, when an append would pass it, then it is refused; one that fits is not", async () => {
    const store = new MemoryEventStore();
    const quota = new StreamQuota(store, { limits: { bytes: 1_000 } });
    const bytesOf = async () => (await store.read(PATH)).reduce((sum, event) => sum + jsonBytes(event), 0);
    const held = quotaStore(store, quota);
    await held.append(PATH, [note("x".repeat(400))]);
    await quota.idle();
    expect(await quota.usage(PATH)).toEqual({ bytes: await bytesOf(), through: 1 });

    await expect(held.append(PATH, [note("y".repeat(600))])).rejects.toMatchObject({ code: "quota_exceeded", details: { bytes: await bytesOf(), quotaBytes: 1_000 } });
    await expect(held.append(PATH, [note("z".repeat(100))])).resolves.toMatchObject({ status: "committed" });
  });

  it("given the machinery's own events appended beside the quota, when the next append commits, then they are counted too and the one after is refused", async () => {
    const store = new MemoryEventStore();
    const quota = new StreamQuota(store, { limits: { events: 10 } });
    const held = quotaStore(store, quota);
    await held.append(PATH, [note("user")]);
    await quota.idle();
    // A driver's and a host's settlements are not held to the quota.
    await store.append(PATH, Array.from({ length: 8 }, (_, i) => note(`machinery ${i}`)));

    // Judged by the usage counted after the last append (1 event): admitted, then counted.
    await held.append(PATH, [note("user again")]);
    await quota.idle();

    expect(await quota.usage(PATH)).toMatchObject({ through: 10 });
    await expect(held.append(PATH, [note("one too many")])).rejects.toMatchObject({ code: "quota_exceeded" });
    // The machinery still commits: a settlement is never refused.
    await expect(store.append(PATH, [note("settlement")])).resolves.toMatchObject({ status: "committed" });
  });

  it("given many appends, when each is counted, then each event is read once for counting", async () => {
    const store = new MemoryEventStore();
    const { reads, eventsRead } = countingReads(store);
    const quota = new StreamQuota(reads);
    const held = quotaStore(store, quota);
    for (let i = 0; i < 20; i++) {
      await held.append(PATH, [note(`user ${i}`)]);
      await store.append(PATH, [note(`reply ${i}`)]);
    }
    await quota.idle();

    expect(await store.lastOffset(PATH)).toBe(40);
    // A count reads on to the stream's end, the reply appended after the last user message too.
    expect((await quota.usage(PATH))?.through).toBe(40);
    expect(eventsRead()).toBe(40);
  });

  it("given a stream appended to faster than a count round, when a usage report counts it, then it reports as of the call instead of chasing the appends", async () => {
    const store = new MemoryEventStore();
    // A shared ledger that answers in 3 ms (NATS KV round trips): each round of the appends'
    // count takes longer than the next append, so their count always has more to do.
    const ledger = slowLedger(3);
    const quota = new StreamQuota(store, { ledger });
    const held = quotaStore(store, quota);
    await held.append(PATH, [note("first")]);
    let reported = false;
    let appended = 0;
    const appending = (async () => {
      // At most 3 000 appends: without the bound on the report, it waited for them all.
      while (!reported && appended < 3_000) {
        await held.append(PATH, [note(`more ${appended}`)]);
        appended += 1;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const lastAtCall = await store.lastOffset(PATH);

    const usage = await quota.countNow(PATH);
    reported = true;
    await appending;

    expect(appended).toBeLessThan(3_000);
    expect(usage.through).toBeGreaterThanOrEqual(lastAtCall);
    // And the bytes are those of the events it counted through, every writer's included
    const events = await store.read(PATH, { limit: usage.through });
    expect(usage.bytes).toBe(events.reduce((sum, event) => sum + jsonBytes(event), 0));
  });

  it("given the appends' count failing in the background, when a usage report counts, then the report counts for itself and answers", async () => {
    // Review: the report awaited the background round, and took its failure for its own
    const inner = new MemoryUsageLedger();
    let failPut = true;
    const ledger: UsageLedger = {
      get: (path) => inner.get(path),
      put: async (path, usage, revision) => {
        if (failPut) {
          failPut = false;
          await new Promise((resolve) => setTimeout(resolve, 20));
          throw new Error("ledger blip in a background round");
        }
        return await inner.put(path, usage, revision);
      },
      tenant: (prefix) => inner.tenant(prefix),
      putTenant: (prefix, usage, revision) => inner.putTenant(prefix, usage, revision),
    };
    const store = new MemoryEventStore();
    const failures: string[] = [];
    const quota = new StreamQuota(store, { ledger, onError: (error) => failures.push((error as Error).message) });
    await quotaStore(store, quota).append(PATH, [note("1")]);

    await expect(quota.countNow(PATH)).resolves.toMatchObject({ through: 1 });
    await quota.idle();
    expect(failures).toEqual(["ledger blip in a background round"]);
  });

  it("given a usage report of a stream whose caller went away, then the count stops with the caller's abort", async () => {
    const store = new MemoryEventStore();
    const quota = new StreamQuota(store, { readPageBytes: 1_000 });
    await store.append(PATH, Array.from({ length: 50 }, (_, i) => note(`event ${i}`)));
    const gone = new AbortController();
    gone.abort(new Error("the client went away"));

    await expect(quota.countNow(PATH, gone.signal)).rejects.toThrow("the client went away");
  });

  it("given appends committed while a count runs, when it ends, then it counts on through them in one more read", async () => {
    const store = new MemoryEventStore();
    const quota = new StreamQuota(store);
    const held = quotaStore(store, quota);
    await Promise.all(Array.from({ length: 10 }, (_, i) => held.append(PATH, [note(`user ${i}`)])));
    await quota.idle();

    expect((await quota.usage(PATH))?.through).toBe(10);
  });

  it("given appends to many streams at once, when they are counted, then at most countsAtOnce counts read at a time, and all end", async () => {
    const store = new MemoryEventStore();
    let reading = 0;
    let most = 0;
    const reads: Pick<EventStore, "read" | "lastOffset"> = {
      read: async (path, options) => {
        most = Math.max(most, ++reading);
        await new Promise((resolve) => setTimeout(resolve, 2));
        reading--;
        return await store.read(path, options);
      },
      lastOffset: (path) => store.lastOffset(path),
    };
    // Tenants off: only the counts read (a tenant's check for a new stream reads one event on the append's path).
    const quota = new StreamQuota(reads, { countsAtOnce: 2, tenantLimits: { depth: 0 } });
    const held = quotaStore(store, quota);
    const paths = Array.from({ length: 12 }, (_, i) => `/agents/quota/many-${i}`);
    await Promise.all(paths.map((path) => held.append(path, [note("hello")])));
    await quota.idle();

    expect(most).toBe(2);
    for (const path of paths) expect(await quota.usage(path)).toMatchObject({ through: 1 });
  });

  it("given another process counted the stream, when this one first appends there, then the shared ledger refuses it without reading the stream", async () => {
    const store = new MemoryEventStore();
    const ledger = new MemoryUsageLedger();
    const first = new StreamQuota(store, { ledger, limits: { events: 2 } });
    await quotaStore(store, first).append(PATH, [note("1"), note("2")]);
    await first.idle();

    const { reads, eventsRead } = countingReads(store);
    const second = new StreamQuota(reads, { ledger, limits: { events: 2 } });
    await expect(quotaStore(store, second).append(PATH, [note("3")])).rejects.toMatchObject({ code: "quota_exceeded" });
    expect(eventsRead()).toBe(0);
  });

  it("given two processes counting one stream, when both count, then the ledger holds the furthest count and neither counts an event twice", async () => {
    const store = new MemoryEventStore();
    const ledger = new MemoryUsageLedger();
    const a = new StreamQuota(store, { ledger });
    const b = new StreamQuota(store, { ledger });
    await quotaStore(store, a).append(PATH, [note("a1")]);
    await quotaStore(store, b).append(PATH, [note("b1")]);
    await Promise.all([a.idle(), b.idle()]);
    await quotaStore(store, a).append(PATH, [note("a2")]);
    await a.idle();

    const bytes = (await store.read(PATH)).reduce((sum, event) => sum + jsonBytes(event), 0);
    expect((await ledger.get(PATH))?.usage).toEqual({ bytes, through: 3 });
  });

  it("given a live-lane append, when it passes a stream at its quota, then it is not refused nor counted", async () => {
    const store = new MemoryEventStore();
    const quota = new StreamQuota(store, { limits: { events: 1 } });
    const held = quotaStore(store, quota);
    await held.append(PATH, [note("1")]);
    await quota.idle();

    await expect(held.append(PATH, [chunk("streaming")])).resolves.toMatchObject({ status: "committed" });
    await quota.idle();
    expect(await quota.usage(PATH)).toMatchObject({ through: 1 });
  });

  it("given a count that fails, when the store answers again, then the next append counts from where the ledger was", async () => {
    const store = new MemoryEventStore();
    const failures: string[] = [];
    let down = true;
    const reads: Pick<EventStore, "read" | "lastOffset"> = {
      read: (path, options) => (down ? Promise.reject(new Error("store down")) : store.read(path, options)),
      lastOffset: (path) => store.lastOffset(path),
    };
    const quota = new StreamQuota(reads, { tenantLimits: { depth: 0 }, onError: (error, path) => failures.push(`${path}: ${(error as Error).message}`) });
    const held = quotaStore(store, quota);
    await held.append(PATH, [note("1")]);
    await quota.idle();
    expect(failures).toEqual([`${PATH}: store down`]);
    expect(await quota.usage(PATH)).toBeUndefined();

    down = false;
    await held.append(PATH, [note("2")]);
    await quota.idle();
    expect(await quota.usage(PATH)).toMatchObject({ through: 2 });
  });

  it("refuses limits that are not positive integers, naming the limit", () => {
    expect(() => new StreamQuota(new MemoryEventStore(), { limits: { bytes: 0 } })).toThrow("stream quota bytes must be a positive integer, got 0");
    expect(() => new StreamQuota(new MemoryEventStore(), { limits: { events: 1.5 } })).toThrow("stream quota events must be a positive integer, got 1.5");
    expect(() => new StreamQuota(new MemoryEventStore(), { tenantLimits: { depth: -1 } })).toThrow("tenant quota depth must be a non-negative integer, got -1");
    expect(() => new StreamQuota(new MemoryEventStore(), { tenantLimits: { streams: 0 } })).toThrow("tenant quota streams must be a positive integer, got 0");
  });
});

describe("a tenant held to its quota", () => {
  const bytesOf = async (store: MemoryEventStore, paths: string[]) => {
    let sum = 0;
    for (const path of paths) sum += (await store.read(path)).reduce((total, event) => total + jsonBytes(event), 0);
    return sum;
  };

  it("names a stream's tenant by its first segments; a shorter path is its own tenant", () => {
    expect(tenantOf("/agents/acme/support/7", 2)).toBe("/agents/acme");
    expect(tenantOf("/agents/acme", 2)).toBe("/agents/acme");
    expect(tenantOf("/shared", 2)).toBe("/shared");
    expect(tenantOf("/agents/acme/support/7", 3)).toBe("/agents/acme/support");
  });

  it("given a tenant's streams holding its bytes together, when any of them, or a new one, would pass it, then it is refused naming the tenant; another tenant is not", async () => {
    const store = new MemoryEventStore();
    const quota = new StreamQuota(store, { tenantLimits: { bytes: 2_000 } });
    const held = quotaStore(store, quota);
    const acme = ["/agents/acme/a", "/agents/acme/b"];
    for (const path of acme) {
      await held.append(path, [note("x".repeat(800))]);
      await quota.idle();
    }
    expect(await quota.tenantUsage("/agents/acme")).toEqual({ bytes: await bytesOf(store, acme), streams: 2 });

    const refusal = { code: "quota_exceeded", details: { tenant: "/agents/acme", tenantStreams: 2, tenantBytes: await bytesOf(store, acme), quotaTenantBytes: 2_000 } };
    await expect(held.append("/agents/acme/a", [note("y".repeat(300))])).rejects.toMatchObject(refusal);
    const created = held.append("/agents/acme/c", [note("y".repeat(300))]);
    await expect(created).rejects.toMatchObject(refusal);
    await expect(created).rejects.toThrow(/^Tenant \/agents\/acme \(every stream under it\) holds 2 streams of \d+ bytes; a new stream \/agents\/acme\/c with \d+ bytes would pass its quota of 100000 streams and 2000 bytes\. Nothing was appended\.$/);
    expect(await store.lastOffset("/agents/acme/c")).toBe(0);
    // Each stream alone is far under its own quota; a small append still fits the tenant.
    await expect(held.append("/agents/acme/b", [note("z")])).resolves.toMatchObject({ status: "committed" });
    await expect(held.append("/agents/other/a", [note("x".repeat(1_500))])).resolves.toMatchObject({ status: "committed" });
  });

  it("given a tenant holding its count of streams, when a key creates another, then it is refused; its streams still take appends", async () => {
    const store = new MemoryEventStore();
    const quota = new StreamQuota(store, { tenantLimits: { streams: 2 } });
    const held = quotaStore(store, quota);
    await held.append("/agents/acme/a", [note("1")]);
    await held.append("/agents/acme/b", [note("1")]);
    await quota.idle();

    await expect(held.append("/agents/acme/c", [note("1")])).rejects.toMatchObject({ code: "quota_exceeded", details: { tenant: "/agents/acme", tenantStreams: 2, quotaTenantStreams: 2 } });
    await expect(held.append("/agents/acme/a", [note("2")])).resolves.toMatchObject({ status: "committed" });
  });

  it("given two processes counting one tenant's streams, when both count, then the tenant is charged each event once, and a stream it already holds is not counted twice", async () => {
    const store = new MemoryEventStore();
    const ledger = new MemoryUsageLedger();
    const a = new StreamQuota(store, { ledger });
    const b = new StreamQuota(store, { ledger });
    await quotaStore(store, a).append("/agents/acme/a", [note("a1")]);
    await quotaStore(store, b).append("/agents/acme/a", [note("b1")]);
    await quotaStore(store, b).append("/agents/acme/b", [note("b2")]);
    await store.append("/agents/acme/a", [note("machinery")]);
    await Promise.all([a.idle(), b.idle()]);
    await quotaStore(store, a).append("/agents/acme/a", [note("a2")]);
    await Promise.all([a.idle(), b.idle()]);

    expect((await ledger.tenant("/agents/acme"))?.usage).toEqual({ bytes: await bytesOf(store, ["/agents/acme/a", "/agents/acme/b"]), streams: 2 });
  });

  it("given a busy tenant, when many of its streams are counted at once in one process, then every charge reaches its entry", async () => {
    const store = new MemoryEventStore();
    const ledger = new MemoryUsageLedger();
    const quota = new StreamQuota(store, { ledger, countsAtOnce: 64 });
    const held = quotaStore(store, quota);
    const paths = Array.from({ length: 60 }, (_, i) => `/agents/busy/${i}`);
    await Promise.all(paths.map((path) => held.append(path, [note(path)])));
    await quota.idle();

    expect((await ledger.tenant("/agents/busy"))?.usage).toEqual({ bytes: await bytesOf(store, paths), streams: 60 });
  });

  it("given depth 0, then tenants are not held to anything", async () => {
    const store = new MemoryEventStore();
    const quota = new StreamQuota(store, { tenantLimits: { depth: 0, streams: 1 } });
    const held = quotaStore(store, quota);
    await held.append("/agents/acme/a", [note("1")]);
    await quota.idle();
    await expect(held.append("/agents/acme/b", [note("1")])).resolves.toMatchObject({ status: "committed" });
  });
});
