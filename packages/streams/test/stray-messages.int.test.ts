// A message on an agent's subject that is not a record (any NATS user that may publish on the
// events' subjects can send one; a bug could): readers pass over it, and writers publish after
// it, continuing the offsets. It had been taken as the stream's end: the whole history then
// read as empty and every later append failed as "too many concurrent writers", for good.

import { jetstream } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { RecordReader } from "../src/jetstream/records.ts";
import { contents, feedBatchesOf, note, storeFixture } from "./store-fixture.ts";

const names = { streamName: "EV_STRAY", subjectPrefix: "evs", ephemeralPrefix: "ephs", partitionCount: 4 };
const fixture = storeFixture(names);
const { subjectOf } = fixture;


/** Publishes something that is not a record on the stream's subject (or on `subject`, with a message id). */
async function stray(path: string, body = "not a record", options: { subject?: string; msgID?: string } = {}): Promise<number> {
  const headers = natsHeaders();
  if (options.msgID !== undefined) headers.set("Nats-Msg-Id", options.msgID);
  const ack = await jetstream(fixture.nc).publish(options.subject ?? subjectOf(path), new TextEncoder().encode(body), { headers });
  return ack.seq;
}

/** Counts the gets every RecordReader makes while `work` runs. */
async function countGets(work: () => Promise<unknown>): Promise<number> {
  const proto = RecordReader.prototype as unknown as { get: (...args: unknown[]) => unknown };
  const get = proto.get;
  let gets = 0;
  proto.get = function (this: unknown, ...args: unknown[]) {
    gets++;
    return get.apply(this, args);
  };
  try {
    await work();
  } finally {
    proto.get = get;
  }
  return gets;
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
      const writer = await fixture.fx.openStore();
      for (const content of before) await writer.append(path, [note(content)]);
      const straySeq = await stray(path);
      await stray(path, '{"v":2}');
      for (const content of after) await writer.append(path, [note(content)]);
      // When that store appends again, and a new store reads and appends
      const next = await writer.append(path, [note("three")]);
      const reader = await fixture.fx.openStore();
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
      const batches = await feedBatchesOf(reader, path, 4);
      expect(batches.flatMap((b) => contents(b.events))).toEqual(["one", "two", "three", "four"]);
      expect(batches.every((b) => b.sequence !== straySeq)).toBe(true);
    }, 60_000);
  }

  for (const [what, body] of [
    ["a higher offset", '{"v":1,"first":1000000,"n":1,garbage'],
    ["a lower offset", '{"v":1,"first":1,"n":1,"at":"2026-01-01T00:00:00.000Z","path":"/stray/a-lower-offset","events":[{"type"'],
    ["another stream's path", '{"v":1,"first":9,"n":1,"at":"2026-01-01T00:00:00.000Z","path":"/elsewhere","events":[]}'],
  ] as const) {
    it(`is not read as a record when it only starts like one, claiming ${what}`, async () => {
      // Given two records, then a message whose head claims offsets but whose body is not a record of this stream
      const path = `/stray/${what.replaceAll(/[^a-z]+/g, "-")}`;
      const store = await fixture.fx.openStore();
      await store.append(path, [note("one")]);
      await store.append(path, [note("two")]);
      await stray(path, body);
      // When a new store appends and reads
      const fresh = await fixture.fx.openStore();
      const appended = await fresh.append(path, [note("three")]);
      // Then the offsets continue from the records, and the history reads whole
      expect(appended.events.map((e) => e.offset)).toEqual([3]);
      expect(await fresh.lastOffset(path)).toBe(3);
      expect(await fresh.read(path).then(contents)).toEqual(["one", "two", "three"]);
    }, 60_000);
  }

  it("does not hold an offset's claim: a message id squatting the next offset, sent from another subject, refuses no append", async () => {
    const path = "/stray/squatted";
    const store = await fixture.fx.openStore();
    await store.append(path, [note("one")]);
    await stray(path, "x", { subject: subjectOf("/stray/elsewhere"), msgID: `${subjectOf(path)}@2` });
    await stray(path, "x", { subject: subjectOf("/stray/elsewhere"), msgID: `${subjectOf(path)}@3` });
    expect((await store.append(path, [note("two")])).events.map((e) => e.offset)).toEqual([2]);
    expect((await (await fixture.fx.openStore()).append(path, [note("three")])).events.map((e) => e.offset)).toEqual([3]);
    expect(await store.read(path).then(contents)).toEqual(["one", "two", "three"]);
  }, 60_000);

  it("is not held by a chain of squatted claims, each naming the last: the append lands at once", async () => {
    // Given the next offset's plain claim squatted, and then each id a writer would derive from
    // the message holding the one before (`@N~<its seq>`), 210 links published in advance (red-team:
    // every append to the agent refused for the duplicate window)
    const path = "/stray/chained";
    const store = await fixture.fx.openStore();
    await store.append(path, [note("one")]);
    const elsewhere = subjectOf("/stray/chain-elsewhere");
    let seq = await stray(path, "x", { subject: elsewhere, msgID: `${subjectOf(path)}@2` });
    for (let link = 0; link < 210; link++) seq = await stray(path, "x", { subject: elsewhere, msgID: `${subjectOf(path)}@2~${seq}` });
    // When the agent is appended to, by this store and by a fresh one
    const started = performance.now();
    expect((await store.append(path, [note("two")])).events.map((e) => e.offset)).toEqual([2]);
    expect((await (await fixture.fx.openStore()).append(path, [note("three")])).events.map((e) => e.offset)).toEqual([3]);
    // Then both land, each after a few attempts, not one per link
    expect(await store.read(path).then(contents)).toEqual(["one", "two", "three"]);
    expect(performance.now() - started).toBeLessThan(10_000);
  }, 60_000);

  it("costs a few gets at the end of a long stream, not a walk through its history", async () => {
    // Given an agent with 600 records, other agents' records after them, and one stray at its end
    const path = "/stray/long";
    const store = await fixture.fx.openStore();
    for (let i = 0; i < 600; i++) await store.append(path, [note(`e${i}`)]);
    for (let i = 0; i < 300; i++) await store.append(`/stray/other-${i % 7}`, [note(`o${i}`)]);
    await stray(path);
    // When its end is looked up
    const fresh = await fixture.fx.openStore();
    const gets = await countGets(() => fresh.lastOffset(path));
    // Then the look-up found the last record in a few gets (it walked 150 and more one by one before)
    expect(await fresh.lastOffset(path)).toBe(600);
    expect(gets).toBeLessThan(40);
  }, 120_000);

  it("is not taken for an empty stream by the list of streams", async () => {
    const path = "/stray/listed";
    const store = await fixture.fx.openStore();
    await store.append(path, [note("one")]);
    await stray(path);
    expect(await store.listStreams("/stray/listed")).toEqual([{ streamPath: path, lastOffset: 1 }]);
  }, 60_000);
});
