// A settlement's riding keys (the assistant context, the token usage, the failure and expiry
// errors, the interrupted partial) are only ever appended in one batch with the settlement key,
// so the key index holds the settlement key alone: one entry per settlement, not three, and a
// second settlement is still refused whole, with every original.

import { afterAll, beforeAll, expect, it } from "vitest";
import type { JetStreamEventStore } from "../src/jetstream/index.ts";
import { note, settlementBatch } from "./event-store-suite.ts";
import { type KeyIndexFixture, startKeyIndexFixture } from "./key-index-fixture.ts";

let fx: KeyIndexFixture;
const openStore = (): Promise<JetStreamEventStore> => fx.openStore();

beforeAll(async () => {
  fx = await startKeyIndexFixture({ streamName: "EV_SETTLE", subjectPrefix: "evs", ephemeralPrefix: "ephs", partitionCount: 4 });
});
afterAll(async () => fx?.stop());

it("reserves only the settlement key of a settlement batch, and still refuses a second settlement whole", async () => {
  const driver = await openStore();
  const path = "/agents/settle/one";
  await driver.append(path, [note("hello")]);
  const settled = await driver.append(path, settlementBatch(1, "the reply"));
  expect((await fx.index.lookup(path, "agent/settle/1"))?.first).toBe(2);
  expect(await fx.index.lookup(path, "agent/assistant-context@1")).toBeUndefined();
  expect(await fx.index.lookup(path, "agent/token-usage@1")).toBeUndefined();
  // A zombie on its own connection, which never saw the stream: the settlement key's entry
  // names the record, and the riders are told from that record's events.
  const zombie = await openStore();
  expect(await zombie.append(path, settlementBatch(1, "a zombie's reply"))).toEqual({ status: "duplicate", events: settled.events });
  // An expiry racing it from the reducer: refused whole, its error not written.
  const expiry = [
    { type: "agent/llm-request-settled", payload: { requestOffset: 1, result: { status: "cancelled", reason: "expired" } }, idempotencyKey: "agent/settle/1" },
    { type: "stream/error-occurred", payload: { message: "expired" }, idempotencyKey: "agent/expiry-error/1" },
  ];
  expect(await (await openStore()).append(path, expiry)).toEqual({ status: "duplicate", events: [settled.events[1]] });
  expect((await driver.read(path)).map((e) => e.type)).toEqual(["agents/context-added", "agents/context-added", "agent/llm-request-settled", "agent/token-usage-reported"]);
});

it("a stream written before the rule, whose riders have entries, answers a second settlement the same way", async () => {
  const path = "/agents/settle/older";
  const store = await openStore();
  await store.append(path, [note("hello")]);
  const settled = await store.append(path, settlementBatch(1, "the reply"));
  // As an older store left it: an entry for every key of the record.
  for (const key of ["agent/assistant-context@1", "agent/token-usage@1"]) expect(await fx.index.reserve(path, key, 2, undefined)).toBeGreaterThan(0);
  expect(await (await openStore()).append(path, settlementBatch(1, "again"))).toEqual({ status: "duplicate", events: settled.events });
  expect((await store.append(path, settlementBatch(4, "next"))).events.map((e) => e.offset)).toEqual([5, 6, 7]);
  expect((await fx.index.lookup(path, "agent/settle/4"))?.first).toBe(5);
});
