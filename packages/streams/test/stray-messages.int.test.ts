// A message on an agent's subject that is not a record (any NATS user that may publish on the
// events' subjects can send one; a bug could): readers pass over it, and writers publish after
// it, continuing the offsets. It had been taken as the stream's end: the whole history then
// read as empty and every later append failed as "too many concurrent writers", for good.

import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FeedBatch } from "../src/event-store.ts";
import { durableSubject } from "../src/jetstream/subjects.ts";
import { partitionOfPath } from "../src/partition.ts";
import { type KeyIndexFixture, startKeyIndexFixture } from "./key-index-fixture.ts";

const names = { streamName: "EV_STRAY", subjectPrefix: "evs", ephemeralPrefix: "ephs", partitionCount: 4 };
let fx: KeyIndexFixture;
let nc: NatsConnection;

beforeAll(async () => {
  fx = await startKeyIndexFixture(names);
  nc = await fx.connect();
}, 60_000);
afterAll(async () => {
  await fx?.stop();
});

const note = (content: string) => ({ type: "agents/context-added", payload: { role: "user", content } });
const subjectOf = (path: string) => durableSubject({ durablePrefix: names.subjectPrefix, ephemeralPrefix: names.ephemeralPrefix }, partitionOfPath(path, names.partitionCount), path);
const contents = (events: readonly { payload: unknown }[]) => events.map((e) => (e.payload as { content: string }).content);

/** Publishes something that is not a record on the stream's subject. */
async function stray(path: string, body = "not a record"): Promise<number> {
  const ack = await jetstream(nc).publish(subjectOf(path), new TextEncoder().encode(body));
  return ack.seq;
}

describe("a message on a stream's subject that is not a record", () => {
  for (const [where, before, after] of [
    ["first", [], ["one", "two"]],
    ["between two records", ["one"], ["two"]],
    ["last", ["one", "two"], []],
  ] as const) {
    it(`is passed over when it is the ${where}: reads, appends, subscriptions and the feed go on`, async () => {
      // Given a stream with a stray message among its records, written by a store that knew the stream's end before the stray
      const path = `/stray/${where.replaceAll(" ", "-")}`;
      const writer = await fx.openStore();
      for (const content of before) await writer.append(path, [note(content)]);
      const straySeq = await stray(path);
      await stray(path, '{"v":2}');
      for (const content of after) await writer.append(path, [note(content)]);
      // When that store appends again, and a new store reads and appends
      const next = await writer.append(path, [note("three")]);
      const reader = await fx.openStore();
      const read = await reader.read(path);
      const fromNew = await reader.append(path, [note("four")]);
      // Then every record is read, in order, with dense offsets, and both appends continued them
      expect(next.status).toBe("committed");
      expect(fromNew.events.map((e) => e.offset)).toEqual([4]);
      expect(contents(read)).toEqual(["one", "two", "three"]);
      expect(read.map((e) => e.offset)).toEqual([1, 2, 3]);
      expect(await reader.lastOffset(path)).toBe(4);
      expect(await reader.read(path, { fromOffset: 3 }).then(contents)).toEqual(["three", "four"]);
      // And a subscription from the start delivers each record once
      const subscription = reader.subscribe(path, { fromOffset: 1 });
      const seen: string[] = [];
      for await (const event of subscription) {
        seen.push((event.payload as { content: string }).content);
        if (event.offset === 4) break;
      }
      await subscription.close();
      expect(seen).toEqual(["one", "two", "three", "four"]);
      // And the partition feed passes over the stray too
      const feed = reader.feed({ partitions: [reader.partitionOf(path)] });
      const batches: FeedBatch[] = [];
      for await (const batch of feed) {
        if (batch.streamPath === path) batches.push(batch);
        if (batches.length === 4) break;
      }
      await feed.close();
      expect(batches.flatMap((b) => contents(b.events))).toEqual(["one", "two", "three", "four"]);
      expect(batches.every((b) => b.sequence !== straySeq)).toBe(true);
    }, 60_000);
  }

  it("is not taken for an empty stream by the list of streams", async () => {
    const path = "/stray/listed";
    const store = await fx.openStore();
    await store.append(path, [note("one")]);
    await stray(path);
    expect(await store.listStreams("/stray/listed")).toEqual([{ streamPath: path, lastOffset: 1 }]);
  }, 60_000);
});
