// An at-head append whose keys the caller vouches are new (`keysNewAtHead`, the reducer's
// decisions) sends its key reservations together with its publish: one round trip less before
// the record is stored. Still exactly once: a reservation an earlier, lost attempt left behind
// ends up naming the committed record, a writer whose view is behind gets a conflict, and two
// writers racing for the same offset with the same key store the key once.

import { AgentRuntimeError } from "@agentrt/contract";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { JetStreamEventStore } from "../src/jetstream/index.ts";
import { type KeyIndexFixture, startKeyIndexFixture } from "./key-index-fixture.ts";

let fx: KeyIndexFixture;
const names = { streamName: "EV_HEAD", subjectPrefix: "evh", ephemeralPrefix: "ephh", partitionCount: 4 };

const note = (content: string, idempotencyKey?: string) => ({
  type: "agents/context-added",
  payload: { role: "user", content },
  ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
});
const atHead = (expectedLastOffset: number) => ({ expectedLastOffset, keysNewAtHead: true });

/** What the store's connection was asked to do, in order: KV requests and their answers, event publishes. */
interface Traffic {
  readonly log: string[];
}

/**
 * A store on a connection that records its KV requests (the key reservations), when each was
 * answered, and its event publishes: enough to tell whether a publish waited for a reservation.
 */
async function openStore(traffic?: Traffic): Promise<JetStreamEventStore> {
  const nc = await fx.connect();
  const reservationReplies = new Set<string>();
  const watched =
    traffic === undefined
      ? nc
      : new Proxy(nc, {
          get(target, property) {
            if (property === "request") {
              return async (subject: string, ...rest: unknown[]) => {
                const kv = subject.startsWith("$KV.");
                if (kv) traffic.log.push("reserve sent");
                try {
                  return await (target.request as (...args: unknown[]) => Promise<unknown>).call(target, subject, ...rest);
                } finally {
                  if (kv) traffic.log.push("reserve answered");
                }
              };
            }
            if (property === "publish") {
              return (subject: string, data: unknown, options?: { reply?: string }) => {
                if (subject.startsWith(`${names.subjectPrefix}.`)) traffic.log.push("publish sent");
                // A key lookup is a direct get of the index bucket; a direct get of the events' stream is a read.
                if (subject.startsWith("$JS.API.DIRECT.GET.")) traffic.log.push(subject.startsWith("$JS.API.DIRECT.GET.KV_") ? "lookup sent" : "read sent");
                // A reservation goes out as a publish whose ack comes back on the publisher's inbox.
                if (subject.startsWith("$KV.") && options?.reply !== undefined) {
                  traffic.log.push("reserve sent");
                  reservationReplies.add(options.reply);
                }
                return (target.publish as (...args: unknown[]) => unknown).call(target, subject, data, options);
              };
            }
            if (property === "subscribe") {
              return (subject: string, options?: { callback?: (error: unknown, msg: { subject: string }) => void }) => {
                const callback = options?.callback;
                if (callback === undefined) return target.subscribe(subject, options as never);
                return target.subscribe(subject, {
                  ...options,
                  callback: (error: unknown, msg: { subject: string }) => {
                    if (reservationReplies.delete(msg?.subject)) traffic.log.push("reserve answered");
                    callback(error, msg);
                  },
                } as never);
              };
            }
            const value: unknown = Reflect.get(target, property, target);
            return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
          },
        });
  return fx.openStore(watched);
}

async function rejection(promise: Promise<unknown>): Promise<AgentRuntimeError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AgentRuntimeError) return error;
    throw error;
  }
  throw new Error("expected the append to be refused");
}

beforeAll(async () => {
  fx = await startKeyIndexFixture(names);
});
afterAll(async () => fx?.stop());

it("sends the key reservation with the publish instead of waiting for it, and commits the key once", async () => {
  const traffic: Traffic = { log: [] };
  const store = await openStore(traffic);
  const path = "/agents/head/together";
  await store.append(path, [note("one"), note("two", "k0")]);
  traffic.log.length = 0;
  const committed = await store.append(path, [note("request", "k1")], atHead(2));
  expect(committed.status).toBe("committed");
  expect(committed.events.map((e) => e.offset)).toEqual([3]);
  // The publish went out while the reservation was still unanswered.
  expect(traffic.log.indexOf("publish sent")).toBeGreaterThan(-1);
  expect(traffic.log.indexOf("publish sent")).toBeLessThan(traffic.log.indexOf("reserve answered"));
  expect((await fx.index.lookup(path, "k1"))?.first).toBe(3);
  // Without the caller's word, the reservation still goes first.
  traffic.log.length = 0;
  await store.append(path, [note("plain", "k2")], { expectedLastOffset: 3 });
  expect(traffic.log.indexOf("reserve answered")).toBeLessThan(traffic.log.indexOf("publish sent"));
  const again = await store.append(path, [note("request again", "k1")]);
  expect(again).toEqual({ status: "duplicate", events: committed.events });
});

it("points a reservation left by a lost attempt at the committed record, so the key stays unique", async () => {
  const store = await openStore();
  const path = "/agents/head/stale";
  await store.append(path, [note("one")]);
  // An earlier attempt reserved k for offset 2 and lost it to an unkeyed record.
  expect(await fx.index.reserve(path, "k", 2, undefined)).toBeGreaterThan(0);
  await store.append(path, [note("two")]);
  const committed = await store.append(path, [note("request", "k")], atHead(2));
  expect(committed.events.map((e) => [e.offset, e.idempotencyKey])).toEqual([[3, "k"]]);
  // Resolved only once the reservation names the record.
  expect((await fx.index.lookup(path, "k"))?.first).toBe(3);
  const another = await openStore();
  expect(await another.append(path, [note("request again", "k")])).toEqual({ status: "duplicate", events: committed.events });
  expect((await store.read(path)).map((e) => e.idempotencyKey ?? null)).toEqual([null, null, "k"]);
});

it("a writer whose view is behind gets a conflict; deciding again at the new head commits the key once", async () => {
  const reducer = await openStore();
  const other = await openStore();
  const path = "/agents/head/behind";
  await reducer.append(path, [note("one")]);
  // Another writer moves the stream on; the reducer has not seen it.
  await other.append(path, [note("two")]);
  expect((await rejection(reducer.append(path, [note("request", "r")], atHead(1)))).code).toBe("conflict");
  // Its reservation (if it took) names offset 2, which holds the other record: stale.
  const committed = await reducer.append(path, [note("request", "r")], atHead(2));
  expect(committed.events.map((e) => [e.offset, e.idempotencyKey])).toEqual([[3, "r"]]);
  expect((await fx.index.lookup(path, "r"))?.first).toBe(3);
  expect((await other.append(path, [note("request again", "r")])).status).toBe("duplicate");
  expect((await other.read(path)).filter((e) => e.idempotencyKey === "r").map((e) => e.offset)).toEqual([3]);
});

it("a batch past its head is refused at once: no key lookup, whether the view or the publish finds the stream moved", async () => {
  const traffic: Traffic = { log: [] };
  const reducer = await openStore(traffic);
  const other = await openStore();
  const path = "/agents/head/past";
  await reducer.append(path, [note("one")]);
  await other.append(path, [note("two", "t")]);
  // The publish finds the stream moved (the reducer's view is at 1): one publish, no lookup.
  traffic.log.length = 0;
  expect((await rejection(reducer.append(path, [note("request", "p")], atHead(1)))).code).toBe("conflict");
  expect(traffic.log.filter((t) => t === "publish sent")).toHaveLength(1);
  expect(traffic.log).not.toContain("lookup sent");
  // The view knows it (the refused publish caught it up): nothing is sent at all, even for a
  // batch whose key the newer record carries; the caller's fold of that record holds the key.
  traffic.log.length = 0;
  expect((await rejection(reducer.append(path, [note("request", "t")], atHead(1)))).code).toBe("conflict");
  expect(traffic.log).toEqual([]);
  // At the head the batch commits, and a key already on the stream is still a duplicate for
  // any writer that does not vouch for it.
  expect((await reducer.append(path, [note("request", "p")], atHead(2))).events.map((e) => e.offset)).toEqual([3]);
  expect((await reducer.append(path, [note("plain", "t")])).status).toBe("duplicate");
});

it("two writers racing at the same head with the same key store it once, and the reservation names it", async () => {
  const a = await openStore();
  const b = await openStore();
  for (let round = 0; round < 25; round += 1) {
    const path = `/agents/head/race-${round}`;
    await a.append(path, [note("one")]);
    await b.read(path); // both views at offset 1
    const key = `race-${round}`;
    const outcomes = await Promise.allSettled([a.append(path, [note("from a", key)], atHead(1)), b.append(path, [note("from b", key)], atHead(1))]);
    const committed = outcomes.filter((o) => o.status === "fulfilled" && o.value.status === "committed");
    // The loser hears that the key is taken, or that the stream moved on: never a second copy.
    for (const o of outcomes) if (o.status === "rejected") expect((o.reason as AgentRuntimeError).code).toBe("conflict");
    expect(committed.length).toBe(1);
    const stored = (await a.read(path)).filter((e) => e.idempotencyKey === key);
    expect(stored.map((e) => e.offset)).toEqual([2]);
    expect((await fx.index.lookup(path, key))?.first).toBe(2);
    expect((await a.append(path, [note("again", key)])).status).toBe("duplicate");
  }
});
