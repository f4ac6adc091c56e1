// A subscription never shows a gap, whatever its consumer does: here the consumer skips a
// record (as an ordered consumer reset under load was seen to), and the subscription reads
// the missing range from the store before delivering what follows.

import type { AgentEvent } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { recordJson } from "../src/batch.ts";
import { type RecordReader, type StoredRecord, toStoredRecord } from "../src/jetstream/records.ts";
import { StreamSubscription } from "../src/jetstream/subscriptions.ts";
import { jetStreamDelivering } from "./delivering-consumer.ts";

const SUBJECT = "ev.0.agents.gap";
const encoder = new TextEncoder();

function record(seq: number, offset: number): StoredRecord {
  const event = JSON.stringify({ type: "agent/summary-updated", payload: { activity: `step ${offset}` }, offset, createdAt: "2026-11-30T00:00:00.000Z" });
  return { seq, subject: SUBJECT, first: offset, count: 1, data: encoder.encode(recordJson("/agents/gap", offset, 1, "2026-11-30T00:00:00.000Z", event)) };
}

describe("a subscription whose consumer skips a record", () => {
  it("reads the missing range from the store and delivers every offset once, in order", async () => {
    const stored = [1, 2, 3, 4, 5, 6].map((offset) => record(offset, offset));
    const delivered = stored.filter((r) => r.first !== 4); // the consumer loses offset 4
    const reader = {
      // Every message is a record it may read (no signing here).
      recordOf: toStoredRecord,
      locate: async (_subject: string, offset: number) => ({ startSeq: stored.find((r) => r.first === offset)!.seq, last: stored.at(-1)! }),
      async *scan(_subject: string, fromSeq: number, untilSeq: number) {
        for (const r of stored) if (r.seq >= fromSeq && r.seq <= untilSeq) yield r;
      },
    } as unknown as RecordReader;
    const js = jetStreamDelivering(delivered);
    const subscription = new StreamSubscription(
      { nc: {} as never, js: js as never, reader, streamName: "AGENT_EVENTS", subject: SUBJECT, ephemeralSubject: undefined, fromOffset: 1 },
      () => undefined,
    );
    const seen: AgentEvent[] = [];
    for await (const event of subscription) {
      seen.push(event);
      if (seen.length === 6) break;
    }
    expect(seen.map((e) => e.offset)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(seen[3]!.payload).toEqual({ activity: "step 4" });
  });
});
