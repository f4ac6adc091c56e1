// A read's ordered consumer that goes silent for good (seen in the chaos soak after NATS node
// restarts: the client re-pulls and re-checks the consumer while nothing ever arrives) must not
// hold the read forever: the scan gives the pull up and finishes its range by gets.

import { describe, expect, it } from "vitest";
import { recordJson } from "../src/batch.ts";
import { RecordReader, untilStalled } from "../src/jetstream/records.ts";

const SUBJECT = "ev.0.agents.stalled";
const LAST = 14;
const encoder = new TextEncoder();
const msg = (seq: number) => ({
  seq,
  subject: SUBJECT,
  data: encoder.encode(recordJson("/agents/stalled", seq, 1, "2026-12-02T00:00:00.000Z", JSON.stringify({ type: "agent/created", payload: {}, offset: seq, createdAt: "2026-12-02T00:00:00.000Z" }))),
});

/** A pull that delivers `seqs`, then nothing at all until it is stopped. */
function silentAfter(seqs: number[]) {
  let release: () => void = () => undefined;
  const pull = {
    stops: 0,
    stop() {
      pull.stops += 1;
      release();
    },
    async *[Symbol.asyncIterator]() {
      for (const seq of seqs) yield { ...msg(seq), info: { pending: LAST - seq } };
      await new Promise<void>((resolve) => (release = resolve));
    },
  };
  return pull;
}

describe("a scan whose consumer goes silent", () => {
  it("given a consumer that stops delivering mid-range, when the range is scanned, then the rest is read by gets within the stall limit", async () => {
    const pull = silentAfter([9, 10]);
    let deleted = 0;
    const jsm = { direct: { getMessage: async (_stream: string, q: { seq: number }) => (q.seq <= LAST ? msg(q.seq) : null) } };
    const js = { consumers: { get: async () => ({ fetch: async () => pull, delete: async () => (deleted += 1) > 0 }) } };
    const reader = new RecordReader(jsm as never, js as never, "AGENT_EVENTS", false, 200);
    const started = Date.now();
    const seqs: number[] = [];
    for await (const record of reader.scan(SUBJECT, 1, LAST)) seqs.push(record.seq);
    expect(seqs).toEqual(Array.from({ length: LAST }, (_, i) => i + 1));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(pull.stops).toBe(1);
    expect(deleted).toBe(1);
  });

  it("given a pull that keeps delivering, when it is read, then it is never cut short however long it takes in all", async () => {
    const slow = {
      stop: () => undefined,
      async *[Symbol.asyncIterator]() {
        for (let i = 1; i <= 5; i++) {
          await new Promise((r) => setTimeout(r, 60));
          yield i;
        }
      },
    };
    let stalled = false;
    const got: number[] = [];
    for await (const n of untilStalled(slow, 100, () => (stalled = true))) got.push(n);
    expect(got).toEqual([1, 2, 3, 4, 5]);
    expect(stalled).toBe(false);
  });

  it("given a reader that stops early, when it leaves the loop, then the pull is ended", async () => {
    let returned = false;
    const pull = {
      stop: () => undefined,
      [Symbol.asyncIterator]() {
        let n = 0;
        return { next: async () => ({ done: false, value: (n += 1) }), return: async () => ((returned = true), { done: true, value: undefined }) };
      },
    };
    for await (const n of untilStalled(pull as never, 100, () => undefined)) if (n === 3) break;
    expect(returned).toBe(true);
  });
});
