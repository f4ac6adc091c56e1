// A consumer reset during a failover can deliver a message again: a scan must still yield
// each record once, in order (a read that repeated one record lost the end of its range, and a
// driver then did not find the request it was handed).

import { describe, expect, it } from "vitest";
import { recordJson } from "../src/batch.ts";
import { RecordReader } from "../src/jetstream/records.ts";

const SUBJECT = "ev.0.agents.redelivered";
const encoder = new TextEncoder();
const msg = (seq: number) => ({
  seq,
  subject: SUBJECT,
  data: encoder.encode(
    recordJson("/agents/redelivered", seq, 1, "2026-11-30T00:00:00.000Z", JSON.stringify({ type: "agent/created", payload: {}, offset: seq, createdAt: "2026-11-30T00:00:00.000Z" })),
  ),
});

describe("a scan whose consumer redelivers a message", () => {
  it("yields every record once, in order", async () => {
    const jsm = { direct: { getMessage: async (_stream: string, q: { seq: number }) => (q.seq <= 6 ? msg(q.seq) : null) } };
    const js = {
      consumers: {
        get: async () => ({
          fetch: async () => ({
            async *[Symbol.asyncIterator]() {
              for (const seq of [4, 5, 5, 6]) yield { ...msg(seq), info: { pending: 6 - seq } };
            },
          }),
          delete: async () => true,
        }),
      },
    };
    const reader = new RecordReader(jsm as never, js as never, "AGENT_EVENTS");
    const seqs: number[] = [];
    for await (const record of reader.scan(SUBJECT, 1, 6, 1)) seqs.push(record.seq);
    expect(seqs).toEqual([1, 2, 3, 4, 5, 6]);
  });
});
