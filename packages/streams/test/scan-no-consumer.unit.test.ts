// A read never depends on creating a consumer. Creating one on a replicated stream goes through
// the cluster's meta leader, the slowest part of a NATS cluster to recover: in the chaos soak,
// with nodes restarting, every script's stream read failed on "timeout" for minutes while the
// stream's own leader answered every get. A scan whose consumer is refused, is slow to exist,
// or fails mid-range finishes its range by gets.

import { errors } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { recordJson } from "../src/batch.ts";
import { RecordReader } from "../src/jetstream/records.ts";

const SUBJECT = "ev.0.agents.no-consumer";
const LAST = 20;
const encoder = new TextEncoder();
const msg = (seq: number) => ({
  seq,
  subject: SUBJECT,
  data: encoder.encode(recordJson("/agents/no-consumer", seq, 1, "2026-12-02T00:00:00.000Z", JSON.stringify({ type: "agent/created", payload: {}, offset: seq, createdAt: "2026-12-02T00:00:00.000Z" }))),
});
const ALL = Array.from({ length: LAST }, (_, i) => i + 1);

/** Gets answered from the stored records (as the stream's leader would), counted. */
function leader() {
  const asked: number[] = [];
  const getMessage = async (_stream: string, q: { seq: number }) => {
    asked.push(q.seq);
    return q.seq <= LAST ? msg(q.seq) : null;
  };
  return { asked, jsm: { direct: { getMessage }, streams: { getMessage } } };
}

async function scanAll(reader: RecordReader): Promise<number[]> {
  const seqs: number[] = [];
  for await (const record of reader.scan(SUBJECT, 1, LAST)) seqs.push(record.seq);
  return seqs;
}

describe("a scan that cannot have its consumer", () => {
  it("given a consumer creation that times out, when a long range is scanned, then every record is read by gets", async () => {
    const { jsm, asked } = leader();
    const js = { consumers: { get: async () => Promise.reject(new errors.TimeoutError()) } };
    const reader = new RecordReader(jsm as never, js as never, "AGENT_EVENTS", true);
    expect(await scanAll(reader)).toEqual(ALL);
    expect(asked).toEqual(ALL);
    expect(reader.scansFinishedByGets).toBe(1);
  });

  it("given a consumer creation that is refused outright, when the range is scanned, then it is read by gets too", async () => {
    const { jsm } = leader();
    const js = { consumers: { get: async () => Promise.reject(new Error("maximum consumers limit reached")) } };
    const reader = new RecordReader(jsm as never, js as never, "AGENT_EVENTS", false);
    expect(await scanAll(reader)).toEqual(ALL);
  });

  it("given a consumer that takes longer than the wait to exist, when the range is scanned, then gets finish it at the wait and the late consumer is removed", async () => {
    const { jsm } = leader();
    let deleted = 0;
    let fetched = 0;
    const js = {
      consumers: {
        get: () => new Promise((resolve) => setTimeout(() => resolve({ fetch: async () => ((fetched += 1), []), delete: async () => (deleted += 1) > 0 }), 600)),
      },
    };
    const reader = new RecordReader(jsm as never, js as never, "AGENT_EVENTS", true, 5_000, 100);
    const started = Date.now();
    expect(await scanAll(reader)).toEqual(ALL);
    expect(Date.now() - started).toBeLessThan(500);
    await new Promise((r) => setTimeout(r, 700));
    expect(deleted).toBe(1);
    expect(fetched).toBe(0);
  });

  it("given a consumer whose pull fails mid-range, when the range is scanned, then the records after the last delivered are read by gets, none twice", async () => {
    const { jsm, asked } = leader();
    let deleted = 0;
    const pull = {
      stop: () => undefined,
      async *[Symbol.asyncIterator]() {
        for (const seq of [9, 10, 11]) yield { ...msg(seq), info: { pending: LAST - seq } };
        throw new Error("consumer deleted");
      },
    };
    const js = { consumers: { get: async () => ({ fetch: async () => pull, delete: async () => (deleted += 1) > 0 }) } };
    const reader = new RecordReader(jsm as never, js as never, "AGENT_EVENTS", false);
    expect(await scanAll(reader)).toEqual(ALL);
    // Eight gets before the consumer, then the consumer's three, then gets from 12.
    expect(asked).toEqual([...ALL.slice(0, 8), ...ALL.slice(11)]);
    expect(deleted).toBe(1);
  });

  it("given the caller's abort during a pull, when the scan is running, then the abort ends it (no gets stand in)", async () => {
    const { jsm, asked } = leader();
    const controller = new AbortController();
    const pull = {
      stop: () => undefined,
      async *[Symbol.asyncIterator]() {
        yield { ...msg(9), info: { pending: LAST - 9 } };
        controller.abort(new Error("client went away"));
        throw new Error("pull stopped");
      },
    };
    const js = { consumers: { get: async () => ({ fetch: async () => pull, delete: async () => true }) } };
    const reader = new RecordReader(jsm as never, js as never, "AGENT_EVENTS", false);
    const seqs: number[] = [];
    await expect(
      (async () => {
        for await (const record of reader.scan(SUBJECT, 1, LAST, Number.POSITIVE_INFINITY, controller.signal)) seqs.push(record.seq);
      })(),
    ).rejects.toThrow("client went away");
    expect(seqs).toEqual(ALL.slice(0, 9));
    expect(asked).toEqual(ALL.slice(0, 8));
  });
});
