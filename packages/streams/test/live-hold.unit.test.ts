// What a live subscription holds of the live lane, where any service's NATS user may publish and
// names the durable offset each event follows. Events following an offset far past the durable
// end the subscription has seen are dropped on arrival (or as soon as that end is known); those
// it may hold are bounded in number and bytes, the farthest ahead dropped first; and one held
// event never holds back a later one whose durable offset has been delivered. The first drop is
// reported once.

import type { AgentEvent } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { recordJson } from "../src/batch.ts";
import { type RecordReader, type StoredRecord, toStoredRecord } from "../src/jetstream/records.ts";
import { HELD_LIVE_MAX_BYTES, HELD_LIVE_MAX_EVENTS, LIVE_AHEAD_MAX_OFFSETS, type LiveEventsDropped, StreamSubscription } from "../src/jetstream/subscriptions.ts";
import { jetStreamDelivering } from "./delivering-consumer.ts";

const PATH = "/agents/live/hold";
const SUBJECT = "ev.0.agents.live.hold";
const encoder = new TextEncoder();
const CREATED = "2026-12-07T00:00:00.000Z";

function record(offset: number): StoredRecord {
  const event = JSON.stringify({ type: "agent/summary-updated", payload: { activity: `step ${offset}` }, offset, createdAt: CREATED });
  return { seq: offset, subject: SUBJECT, first: offset, count: 1, data: encoder.encode(recordJson(PATH, offset, 1, CREATED, event)) };
}

/** One live-lane message of `count` chunk events following durable offset `follows`, each with `padding` characters. */
function live(follows: number, count = 1, padding = 0): Uint8Array {
  const events = Array.from({ length: count }, (_, i) => ({
    streamPath: PATH,
    offset: follows,
    createdAt: CREATED,
    type: "agent/llm-response-chunks",
    ephemeral: true,
    payload: { llmRequestOffset: 1, sequence: i, chunks: [{ pad: "x".repeat(padding) }] },
  }));
  return encoder.encode(JSON.stringify(events));
}

/**
 * A subscription on a stream of `stored` records, its consumer delivering them all and then
 * nothing; `located` settles when the test lets the subscription learn the stream's end.
 */
function subscribe(stored: readonly StoredRecord[], located: Promise<void> = Promise.resolve()) {
  let onLive: ((data: Uint8Array) => void) | undefined;
  const nc = {
    subscribe: (_subject: string, options: { callback: (error: Error | null, msg: { data: Uint8Array }) => void }) => {
      onLive = (data) => options.callback(null, { data });
      return { unsubscribe: () => undefined };
    },
  };
  const reader = {
    recordOf: toStoredRecord,
    locate: async (_subject: string, offset: number) => {
      await located;
      return { startSeq: offset, last: stored.at(-1) as StoredRecord };
    },
  } as unknown as RecordReader;
  const js = jetStreamDelivering(stored);
  const reports: LiveEventsDropped[] = [];
  const subscription = new StreamSubscription(
    { nc: nc as never, js: js as never, reader, streamName: "AGENT_EVENTS", subject: SUBJECT, ephemeralSubject: "eph.0.agents.live.hold", fromOffset: 1, onLiveDropped: (d) => reports.push(d) },
    () => undefined,
  );
  const iterator = subscription[Symbol.asyncIterator]();
  return {
    subscription,
    reports,
    publish: (data: Uint8Array) => (onLive as (data: Uint8Array) => void)(data),
    next: async (): Promise<AgentEvent> => (await iterator.next()).value as AgentEvent,
  };
}

const stream = [1, 2, 3].map(record);

describe("a live subscription's held live events", () => {
  it("drops events following an offset far past the durable end it has seen, reporting the first drop once", async () => {
    const s = subscribe(stream);
    for (let offset = 1; offset <= 3; offset++) expect((await s.next()).offset).toBe(offset);
    for (let i = 0; i < 300; i++) s.publish(live(1_000_000_000));
    s.publish(live(3 + LIVE_AHEAD_MAX_OFFSETS + 1));
    expect(s.subscription.heldLive).toEqual({ events: 0, bytes: 0, dropped: 301 });
    expect(s.reports).toEqual([{ subject: SUBJECT, reason: "ahead", offset: 1_000_000_000, durableEnd: 3 }]);
    // Live events of the stream's end still come through.
    s.publish(live(3));
    expect(await s.next()).toMatchObject({ type: "agent/llm-response-chunks", offset: 3 });
    await s.subscription.close();
  });

  it("drops the far-ahead events it held before it knew the stream's end once it learns it", async () => {
    let locate = () => undefined as void;
    const s = subscribe(stream, new Promise<void>((resolve) => (locate = resolve)));
    s.publish(live(1_000_000_000, 5));
    s.publish(live(2));
    expect(s.subscription.heldLive.events).toBe(6);
    locate();
    expect((await s.next()).offset).toBe(1);
    expect(s.subscription.heldLive).toMatchObject({ dropped: 5 });
    expect(s.reports).toHaveLength(1);
    // The plausible one is delivered where it happened, after offset 2.
    expect((await s.next()).offset).toBe(2);
    expect(await s.next()).toMatchObject({ type: "agent/llm-response-chunks", offset: 2 });
    expect((await s.next()).offset).toBe(3);
    expect(s.subscription.heldLive).toMatchObject({ events: 0, bytes: 0 });
    await s.subscription.close();
  });

  it("holds at most HELD_LIVE_MAX_EVENTS events, dropping the farthest ahead", async () => {
    const s = subscribe(stream);
    for (let offset = 1; offset <= 3; offset++) await s.next();
    // Plausibly ahead (the stream may reach them), but more than may be held.
    for (let i = 0; i < HELD_LIVE_MAX_EVENTS + 200; i++) s.publish(live(i < 100 ? 5 : 10));
    expect(s.subscription.heldLive.events).toBe(HELD_LIVE_MAX_EVENTS);
    expect(s.subscription.heldLive.dropped).toBe(200);
    expect(s.reports).toEqual([{ subject: SUBJECT, reason: "bound", offset: 10, durableEnd: 3 }]);
    await s.subscription.close();
  });

  it("holds at most HELD_LIVE_MAX_BYTES of events", async () => {
    const s = subscribe(stream);
    for (let offset = 1; offset <= 3; offset++) await s.next();
    const big = live(20, 1, 800_000);
    for (let i = 0; i < 300; i++) s.publish(big);
    const held = s.subscription.heldLive;
    expect(held.bytes).toBeLessThanOrEqual(HELD_LIVE_MAX_BYTES);
    expect(held.events).toBe(Math.floor(HELD_LIVE_MAX_BYTES / big.length));
    expect(held.dropped).toBe(300 - held.events);
    await s.subscription.close();
  });

  it("delivers a live event of the durable end even while an event following a later offset is held", async () => {
    const s = subscribe(stream);
    for (let offset = 1; offset <= 3; offset++) await s.next();
    s.publish(live(50));
    s.publish(live(3));
    expect(await s.next()).toMatchObject({ type: "agent/llm-response-chunks", offset: 3 });
    expect(s.subscription.heldLive).toMatchObject({ events: 1, dropped: 0 });
    expect(s.reports).toEqual([]);
    await s.subscription.close();
  });
});
