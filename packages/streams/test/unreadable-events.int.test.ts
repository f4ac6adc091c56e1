// A record holding an event this version cannot read (a newer writer's type, or a known type
// with a field it does not know: what a rolling upgrade or a rollback leaves behind): readers
// skip that event and go on, as the contract asks. Its offset is passed over, not waited for:
// every range read, subscription and cache of the stream had stopped at it, so the agent's
// later events were never read again (red-team: a turn that could never run, a page that read
// the same nothing forever).

import { jetstream } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import type { AgentEvent } from "@agentrt/contract";
import { contents, feedBatchesOf, note, storeFixture } from "./store-fixture.ts";

const names = { streamName: "EV_UNREADABLE", subjectPrefix: "evu", ephemeralPrefix: "ephu", partitionCount: 4 };
const fixture = storeFixture(names);

/** Publishes a record as a newer writer would: `events` at `first` on, whatever their types. */
async function publishRecord(path: string, first: number, events: readonly object[]): Promise<void> {
  const body = { v: 1, first, n: events.length, at: new Date().toISOString(), path, events };
  await jetstream(fixture.nc).publish(fixture.subjectOf(path), new TextEncoder().encode(JSON.stringify(body)), { msgID: `${fixture.subjectOf(path)}@${first}` });
}

const future = { type: "agent/teleported", payload: { to: "mars" } };
const withNewField = { type: "agent/paused", payload: { reason: "maintenance", triggerOffset: 1, addedLater: { x: 1 } } };
const offsets = (events: readonly AgentEvent[]) => events.map((e) => e.offset);

describe("events of a newer writer among an agent's records", () => {
  it("are passed over by reads, subscriptions and the feed, and the events after them are all read", async () => {
    // Given notes at @1 and @2, a record of one unknown event at @3, a record @4–@6 whose middle
    // event has a field this version does not know, and a note appended after them by a store
    const path = "/unreadable/mixed";
    const store = await fixture.fx.openStore();
    await store.append(path, [note("one"), note("two")]);
    await publishRecord(path, 3, [future]);
    await publishRecord(path, 4, [note("four"), withNewField, note("six")]);
    const writer = await fixture.fx.openStore();
    expect(offsets((await writer.append(path, [note("seven")])).events)).toEqual([7]);

    // When a new store reads it, whole and from each offset
    const reader = await fixture.fx.openStore();
    // Then every event it can read is there, in order, and the others' offsets are skipped
    expect(offsets(await reader.read(path))).toEqual([1, 2, 4, 6, 7]);
    expect(contents(await reader.read(path, { fromOffset: 3 }))).toEqual(["four", "six", "seven"]);
    expect(offsets(await reader.read(path, { fromOffset: 5 }))).toEqual([6, 7]);
    expect(offsets(await reader.read(path, { fromOffset: 3, limit: 2 }))).toEqual([4, 6]);
    expect(await reader.lastOffset(path)).toBe(7);

    // And a subscription from the start, and one from the unreadable offset, deliver the rest and what follows live
    const readable = [1, 2, 4, 6, 7];
    for (const from of [1, 3, 5]) {
      const subscription = reader.subscribe(path, { fromOffset: from });
      const seen: number[] = [];
      const end = readable.at(-1) as number;
      for await (const event of subscription) {
        seen.push(event.offset);
        if (event.offset === end) readable.push(...offsets((await writer.append(path, [note(`live after ${from}`)])).events));
        if (event.offset === readable.at(-1) && event.offset !== end) break;
      }
      await subscription.close();
      expect(seen, `from @${from}`).toEqual(readable.filter((o) => o >= from));
    }

    // And the feed hands each record over with the offsets it holds, readable or not
    const batches = await feedBatchesOf(reader, path, 4);
    expect(batches.map((b) => [offsets(b.events), b.offsets])).toEqual([
      [[1, 2], { first: 1, last: 2 }],
      [[], { first: 3, last: 3 }],
      [[4, 6], { first: 4, last: 6 }],
      [[7], { first: 7, last: 7 }],
    ]);
  }, 60_000);

  it("at the end of a stream, leaves a read from there empty and the next append after it", async () => {
    const path = "/unreadable/tail";
    const store = await fixture.fx.openStore();
    await store.append(path, [note("one")]);
    await publishRecord(path, 2, [future, future]);
    const reader = await fixture.fx.openStore();
    expect(offsets(await reader.read(path))).toEqual([1]);
    expect(await reader.read(path, { fromOffset: 2 })).toEqual([]);
    expect(await reader.lastOffset(path)).toBe(3);
    expect(offsets((await reader.append(path, [note("four")])).events)).toEqual([4]);
    expect(offsets(await reader.read(path, { fromOffset: 2 }))).toEqual([4]);
  }, 60_000);
});
