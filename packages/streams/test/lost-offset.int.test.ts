// A keyed append whose record loses its offset to another writer's record (a reducer's reaction
// racing a user's message): the key's entry it wrote is still its own, so the next attempt
// replaces that entry from the revision it wrote — no lookup of the key, no read of the record
// that took the offset beyond the catch-up that found it. Unless that record carries the key
// (a writer may carry a reservation pending for exactly its offset): then it is a duplicate.

import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { JetStreamEventStore } from "../src/jetstream/index.ts";
import { type KeyIndexFixture, startKeyIndexFixture } from "./key-index-fixture.ts";

let fx: KeyIndexFixture;
const names = { streamName: "EV_LOST", subjectPrefix: "evl", ephemeralPrefix: "ephl", partitionCount: 4 };

const note = (content: string, idempotencyKey?: string) => ({
  type: "agents/context-added",
  payload: { role: "user", content },
  ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
});

interface Wire {
  /** What the store sent, in order: `read` (a direct get), `reserve` (a key entry written), `publish` (a record). */
  readonly sent: string[];
  /** Runs before the store's next record publish goes out (once). */
  beforeNextPublish?: () => Promise<void>;
  /** The store's next record publish lands, but its acknowledgement is lost. */
  dropNextAck?: boolean;
}

/** A store whose connection reports what it sends, and can hold a record's publish back. */
async function openStore(wire?: Wire, publishTimeoutMs?: number): Promise<JetStreamEventStore> {
  const nc = await fx.connect();
  const watched =
    wire === undefined
      ? nc
      : new Proxy(nc, {
          get(target, property) {
            if (property === "publish") {
              return (subject: string, ...rest: unknown[]) => {
                const send = () => (target.publish as (...args: unknown[]) => unknown).call(target, subject, ...rest);
                if (subject.startsWith("$JS.API.DIRECT.GET.")) wire.sent.push("read");
                else if (subject.startsWith("$KV.")) wire.sent.push("reserve");
                else if (subject.startsWith(`${names.subjectPrefix}.`)) {
                  wire.sent.push("publish");
                  if (wire.dropNextAck === true) {
                    wire.dropNextAck = false;
                    const [data, options] = rest as [unknown, Record<string, unknown>];
                    return target.publish(subject, data as Uint8Array, { ...options, reply: "dropped.ack" });
                  }
                  const before = wire.beforeNextPublish;
                  if (before !== undefined) {
                    wire.beforeNextPublish = undefined;
                    // Sent once the other writer is done; the ack is awaited on the inbox as usual.
                    void before().then(send);
                    return undefined;
                  }
                }
                return send();
              };
            }
            const value: unknown = Reflect.get(target, property, target);
            return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
          },
        });
  return fx.openStore(watched, publishTimeoutMs === undefined ? {} : { publishTimeoutMs });
}

/** Follows `store`'s feed, as a reducer runs one, noting the offsets it brings of `path`'s records. */
function followOffsets(store: JetStreamEventStore, path: string): { readonly offsets: number[]; stop(): Promise<void> } {
  const offsets: number[] = [];
  const feed = store.feed({});
  const following = (async () => {
    for await (const batch of feed) if (batch.streamPath === path) for (const e of batch.events) offsets.push(e.offset);
  })();
  return {
    offsets,
    async stop() {
      feed.close();
      await following;
    },
  };
}

beforeAll(async () => {
  fx = await startKeyIndexFixture(names);
});
afterAll(async () => fx?.stop());

it("takes its key's entry over from the revision it wrote: one catch-up read, no lookups", async () => {
  const wire: Wire = { sent: [] };
  const reducer = await openStore(wire);
  const user = await openStore();
  const path = "/agents/lost/reaction";
  await reducer.append(path, [note("reply")]);
  // The user's next message takes offset 2 while the reducer's view still ends at 1.
  await user.append(path, [note("next message")]);
  wire.sent.length = 0;
  const committed = await reducer.append(path, [note("reaction", "react@1")]);
  expect(committed.events.map((e) => [e.offset, e.idempotencyKey])).toEqual([[3, "react@1"]]);
  // Guessed reservation; the publish refused (offset 2's message id names the user's record,
  // not ours: it answered a first send); the catch-up; the entry replaced; the publish.
  expect(wire.sent).toEqual(["reserve", "publish", "read", "reserve", "publish"]);
  expect((await fx.index.lookup(path, "react@1"))?.first).toBe(3);
  expect((await user.append(path, [note("again", "react@1")])).status).toBe("duplicate");
  expect((await user.read(path)).map((e) => e.idempotencyKey ?? null)).toEqual([null, null, "react@1"]);
});

it("takes the record that took its offset from its own feed when the feed has brought it: no read at all", async () => {
  const wire: Wire = { sent: [] };
  const reducer = await openStore(wire);
  const user = await openStore();
  const path = "/agents/lost/fed";
  await reducer.append(path, [note("reply")]);
  const { offsets: fed, stop } = followOffsets(reducer, path);
  await waitFor(() => fed.includes(1));
  // The user's message takes offset 2 while the reaction is on its way out, and the reducer's
  // feed brings it before the reaction's publish is answered.
  wire.beforeNextPublish = async () => {
    await user.append(path, [note("next message")]);
    await waitFor(() => fed.includes(2));
  };
  wire.sent.length = 0;
  const committed = await reducer.append(path, [note("reaction", "react@1")]);
  expect(committed.events.map((e) => [e.offset, e.idempotencyKey])).toEqual([[3, "react@1"]]);
  // Guessed reservation; the publish refused; the entry replaced from the revision it wrote;
  // the publish. The fed record said where the stream ends and that it carries no such key.
  expect(wire.sent).toEqual(["reserve", "publish", "reserve", "publish"]);
  expect((await fx.index.lookup(path, "react@1"))?.first).toBe(3);
  expect((await user.append(path, [note("again", "react@1")])).status).toBe("duplicate");
  expect((await user.read(path)).map((e) => e.idempotencyKey ?? null)).toEqual([null, null, "react@1"]);
  await stop();
});

for (const fromFeed of [false, true]) {
  it(`is a duplicate when the record that took its offset carries the key (it found the reservation pending)${fromFeed ? "; that record from the feed" : ""}`, async () => {
    const wire: Wire = { sent: [] };
    const a = await openStore(wire);
    const b = await openStore();
    const path = `/agents/lost/carried${fromFeed ? "-fed" : ""}`;
    await a.append(path, [note("one")]);
    await b.read(path); // b's view ends at 1 too
    const following = fromFeed ? followOffsets(a, path) : undefined;
    let carried: Awaited<ReturnType<typeof b.append>> | undefined;
    // a has reserved k for offset 2; before its record goes out, b appends k: its guess is
    // refused, its lookup finds a's reservation pending for exactly its offset, so it carries it.
    wire.beforeNextPublish = async () => {
      carried = await b.append(path, [note("from b", "k")]);
      if (following !== undefined) await waitFor(() => following.offsets.includes(2));
    };
    const outcome = await a.append(path, [note("from a", "k")]);
    expect(carried?.status).toBe("committed");
    expect(carried?.events.map((e) => e.offset)).toEqual([2]);
    expect(outcome).toEqual({ status: "duplicate", events: carried?.events });
    expect((await b.read(path)).filter((e) => e.idempotencyKey === "k").map((e) => e.offset)).toEqual([2]);
    await following?.stop();
  });
}

it("finds its own record behind a duplicate answer to a resend (the first send landed, its ack was lost)", async () => {
  const wire: Wire = { sent: [] };
  const a = await openStore(wire, 300);
  const path = "/agents/lost/resent";
  await a.append(path, [note("one")]);
  wire.sent.length = 0;
  wire.dropNextAck = true;
  const committed = await a.append(path, [note("keyed", "r")]);
  expect(committed.status).toBe("committed");
  expect(committed.events.map((e) => [e.offset, e.idempotencyKey])).toEqual([[2, "r"]]);
  // The resend was answered "duplicate": the record was read and found to be ours.
  expect(wire.sent.filter((s) => s === "publish")).toHaveLength(2);
  expect(wire.sent).toContain("read");
  expect((await a.read(path)).map((e) => e.idempotencyKey ?? null)).toEqual([null, "r"]);
});
