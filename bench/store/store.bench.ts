// Event store benchmark: JetStreamEventStore vs raw JetStream `js.publish` of the same event
// payloads, in the same run against one harness-started nats-server; plus the cost of reading
// from offset K of a 100 000-event stream. Prints a markdown report and writes it into the
// `## Event store` section of BENCHMARKS.md.
//
//   pnpm exec tsx bench/store/store.bench.ts

import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { natsServerBinary, startNatsServer } from "@agentrt/testing";
import { JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { nuid } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { describeMachine } from "./machine.ts";
import { type LoadResult, closedLoop, eventsPerSecond, percentile } from "./measure.ts";

const COMMAND = "pnpm exec tsx bench/store/store.bench.ts";
const CONCURRENCY = 32;
const ROUNDS = 5;
const OPS_BATCH_1 = 12_000;
const OPS_BATCH_10 = 12_000;
const STREAMS_MANY = 1000;
const LONG_STREAM_EVENTS = 100_000;

const event = (i: number) => ({
  type: "agents/context-added",
  payload: { role: "user", content: `message ${i}: the quick brown fox jumps over the lazy dog, twice over for a realistic size.` },
});
const encoder = new TextEncoder();
/** The raw side's messages: the same 64 event payloads the store appends, encoded once. */
const RAW_PAYLOADS = Array.from({ length: 64 }, (_, i) => encoder.encode(JSON.stringify(event(i))));

interface Row {
  readonly scenario: string;
  readonly raw: Summary;
  readonly store: Summary;
}

async function main(): Promise<void> {
  const loadAtStart = loadavg();
  const server = await startNatsServer({ serverName: "bench" });
  const nc = await connect({ servers: server.url });
  const rawNc = await connect({ servers: server.url });
  try {
    const store = await JetStreamEventStore.open(nc, { partitionCount: 64 });
    const js = jetstream(rawNc);
    const jsm = await jetstreamManager(rawNc);
    await jsm.streams.add({ name: "RAW", subjects: ["raw.>"], allow_direct: true });
    await jsm.streams.add({ name: "CHECKED", subjects: ["checked.>"], allow_direct: true, duplicate_window: 120_000_000_000 });

    // Warm both paths up (JIT, connection buffers, stream files) before anything is timed.
    for (const batch of [1, 10]) {
      await runRaw(js, batch, 3_000 / batch, 100, "warm");
      await runStore(store, batch, 3_000 / batch, 100, "warm");
    }
    const rows: Row[] = [];
    for (const [batch, ops] of [
      [1, OPS_BATCH_1],
      [10, OPS_BATCH_10],
    ] as const) {
      for (const streams of [1, STREAMS_MANY]) {
        const scenario = `batch of ${batch}, ${streams === 1 ? "1 stream" : `${streams} streams`}`;
        // The machine is shared: alternate short rounds so both sides meet the same noise.
        const raws: LoadResult[] = [];
        const stores: LoadResult[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          raws.push(await runRaw(js, batch, ops / ROUNDS, streams, `r${round}`));
          stores.push(await runStore(store, batch, ops / ROUNDS, streams, `r${round}`));
        }
        const raw = combine(raws);
        const stored = combine(stores);
        rows.push({ scenario, raw, store: stored });
        process.stderr.write(`${scenario}: raw ${raw.eventsPerSecond.toFixed(0)} ev/s, store ${stored.eventsPerSecond.toFixed(0)} ev/s\n`);
      }
    }
    const checks = await measureServerChecks(js, jsm);
    const reads = await measureReads(store);
    const report = render(rows, checks, reads, describeMachine(natsServerBinary()), loadAtStart);
    process.stdout.write(`${report}\n`);
    writeSection(report);
    await store.close();
  } finally {
    await nc.close();
    await rawNc.close();
    await server.stop();
  }
}

/**
 * Raw JetStream: one publish per event, what a store without batching would cost. A call
 * appends `batch` events to one subject the only way raw publishing can: it publishes them all
 * at once and waits for every ack (one call = one raw publish when the batch is 1).
 */
async function runRaw(js: JetStreamClient, batch: number, ops: number, streams: number, round: string): Promise<LoadResult> {
  return await closedLoop(ops, CONCURRENCY, batch, (i) => {
    const subject = `raw.${round}.${batch}.${streams}.s${i % streams}`;
    return Promise.all(Array.from({ length: batch }, (_, j) => js.publish(subject, RAW_PAYLOADS[(i * batch + j) % 64])));
  });
}

async function runStore(store: JetStreamEventStore, batch: number, ops: number, streams: number, round: string): Promise<LoadResult> {
  const batches = Array.from({ length: 64 }, (_, i) => Array.from({ length: batch }, (_, j) => event(i * batch + j)));
  return await closedLoop(ops, CONCURRENCY, batch, (i) => store.append(`/bench/${round}/${batch}-${streams}/s${i % streams}`, batches[i % 64] as unknown[]));
}

interface Summary {
  readonly eventsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  /** The lowest and highest p99 of a single round: how much one round's tail can swing. */
  readonly roundP99: readonly [number, number];
}

/**
 * Throughput is the median over rounds: on a shared machine a scheduling burst can spoil one
 * round, and the median keeps that from deciding the comparison. Latency percentiles are taken
 * over every call of every round together (the usual definition): a round lasts ~0.1 s, so a
 * round's own p99 is just "did a stall happen in these 0.1 s", which says little on its own.
 */
function combine(rounds: readonly LoadResult[]): Summary {
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  const all = rounds.flatMap((r) => r.latenciesMs);
  const perRound = rounds.map((r) => percentile(r.latenciesMs, 99));
  return {
    eventsPerSecond: median(rounds.map(eventsPerSecond)),
    p50: percentile(all, 50),
    p99: percentile(all, 99),
    roundP99: [Math.min(...perRound), Math.max(...perRound)],
  };
}

interface CheckFigures {
  readonly variant: string;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Calls of 10 ms or more: in a stall every in-flight call waits, so this counts stalled calls. */
  readonly slowCalls: number;
  readonly calls: number;
}

/**
 * Where the store's tail comes from: raw `js.publish` to 1000 subjects, plain and with the two
 * headers every store append carries (`Nats-Msg-Id`, `Nats-Expected-Last-Subject-Sequence`,
 * kept right per subject from the acks), alternating rounds in one stream each. No store code
 * runs here, so any difference is the server's.
 */
async function measureServerChecks(js: JetStreamClient, jsm: JetStreamManager): Promise<CheckFigures[]> {
  const lastSeq = new Map<string, number>();
  const checked = async (subject: string, data: Uint8Array) => {
    for (;;) {
      try {
        const ack = await js.publish(subject, data, { msgID: nuid.next(), expect: { lastSubjectSequence: lastSeq.get(subject) ?? 0 } });
        lastSeq.set(subject, ack.seq);
        return;
      } catch (error) {
        // Only when a call stalled past the next one on its subject: learn the truth and retry.
        if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence)) throw error;
        const last = await jsm.streams.getMessage("CHECKED", { last_by_subj: subject });
        lastSeq.set(subject, last?.seq ?? 0);
      }
    }
  };
  const variants = {
    plain: [] as LoadResult[],
    "with Nats-Msg-Id": [] as LoadResult[],
    "with Nats-Msg-Id and Nats-Expected-Last-Subject-Sequence": [] as LoadResult[],
  };
  const calls = 12_000;
  for (let round = 0; round < 3; round++) {
    variants.plain.push(await closedLoop(calls, CONCURRENCY, 1, (i) => js.publish(`raw.checks.plain.s${i % STREAMS_MANY}`, RAW_PAYLOADS[i % 64])));
    variants["with Nats-Msg-Id"].push(
      await closedLoop(calls, CONCURRENCY, 1, (i) => js.publish(`raw.checks.id.s${i % STREAMS_MANY}`, RAW_PAYLOADS[i % 64], { msgID: nuid.next() })),
    );
    variants["with Nats-Msg-Id and Nats-Expected-Last-Subject-Sequence"].push(
      await closedLoop(calls, CONCURRENCY, 1, (i) => checked(`checked.s${i % STREAMS_MANY}`, RAW_PAYLOADS[i % 64] as Uint8Array)),
    );
  }
  return Object.entries(variants).map(([variant, rounds]) => {
    const all = rounds.flatMap((r) => r.latenciesMs);
    return {
      variant,
      p50: percentile(all, 50),
      p99: percentile(all, 99),
      max: Math.max(...all),
      slowCalls: all.filter((l) => l >= 10).length,
      calls: all.length,
    };
  });
}

interface ReadFigures {
  readonly seedMs: number;
  readonly messages: number;
  readonly fromOffset: { k: number; p50: number; p99: number }[];
  readonly fullReadMs: number;
}

/** Seeds a 100 000-event stream (batches of 10, interleaved with another stream) and times reads from K. */
async function measureReads(store: JetStreamEventStore): Promise<ReadFigures> {
  const path = "/bench/long/stream";
  const t0 = performance.now();
  let noise = 0;
  await Promise.all([
    (async () => {
      for (let b = 0; b < LONG_STREAM_EVENTS / 10; b++) await store.append(path, Array.from({ length: 10 }, (_, j) => event(b * 10 + j)));
    })(),
    (async () => {
      for (; noise < 5_000; noise++) await store.append("/bench/long/noise", [event(noise)]);
    })(),
  ]);
  const seedMs = performance.now() - t0;
  const fromOffset: ReadFigures["fromOffset"] = [];
  for (const k of [1, 50_000, 99_000]) {
    const times: number[] = [];
    for (let i = 0; i < 60; i++) {
      const s = performance.now();
      const events = await store.read(path, { fromOffset: k, limit: 100 });
      times.push(performance.now() - s);
      if (events[0]?.offset !== k || events.length !== 100) throw new Error(`read from ${k} returned the wrong events`);
    }
    fromOffset.push({ k, p50: percentile(times.slice(10), 50), p99: percentile(times.slice(10), 99) });
  }
  const f0 = performance.now();
  const all = await store.read(path);
  const fullReadMs = performance.now() - f0;
  if (all.length !== LONG_STREAM_EVENTS) throw new Error(`full read returned ${all.length} events`);
  return { seedMs, messages: LONG_STREAM_EVENTS / 10 + noise, fromOffset, fullReadMs };
}

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

function render(rows: readonly Row[], checks: readonly CheckFigures[], reads: ReadFigures, machine: string, loadAtStart: number[]): string {
  const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(", ");
  const lines = [
    "## Event store",
    "",
    `Command: \`${COMMAND}\` — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.`,
    `Machine: ${machine}. One harness-started nats-server (file storage, R1) on loopback, shared by both sides.`,
    `Load average (1/5/15 min) on ${availableParallelism()} cores: ${load(loadAtStart)} when the run started, ${load(loadavg())} when it ended.`,
    "",
    `Appends: ${CONCURRENCY} concurrent callers in a closed loop, each call adding a batch of 1 or 10 events to one stream. "raw" is`,
    "`js.publish` of each event's JSON as its own message (no offsets, no concurrency check, no idempotency): a call publishes its",
    "batch's messages together and waits for all their acks. \"store\" is one `JetStreamEventStore.append` of the same payloads",
    "(validation, offsets, `expect.lastSubjectSequence`, `Nats-Msg-Id`). Latency is per call: until the whole batch is acknowledged.",
    `Each scenario runs ${ROUNDS} alternating raw/store rounds after a warm-up. Throughput is the median over a side's rounds;`,
    "p50/p99 are over every call of the side's rounds together; \"round p99\" is the lowest–highest p99 of a single round.",
    "",
    "| scenario | raw events/s | store events/s | store/raw | raw p50 ms | raw p99 ms | store p50 ms | store p99 ms | p99 store/raw | round p99 raw | round p99 store |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  const range = ([lo, hi]: readonly [number, number]) => `${fmt(lo, 1)}–${fmt(hi, 1)}`;
  for (const { scenario, raw, store } of rows) {
    lines.push(
      `| ${scenario} | ${fmt(raw.eventsPerSecond)} | ${fmt(store.eventsPerSecond)} | ${fmt(store.eventsPerSecond / raw.eventsPerSecond, 2)}× | ${fmt(raw.p50, 2)} | ${fmt(raw.p99, 2)} | ${fmt(store.p50, 2)} | ${fmt(store.p99, 2)} | ${fmt(store.p99 / raw.p99, 2)}× | ${range(raw.roundP99)} | ${range(store.roundP99)} |`,
    );
  }
  const verdict = (ok: boolean) => (ok ? "met" : "**not met**");
  lines.push("", "Goals (issue #2), per scenario:", "");
  for (const { scenario, raw, store } of rows) {
    const ratio = store.eventsPerSecond / raw.eventsPerSecond;
    const throughputGoal = scenario.startsWith("batch of 1,") ? 0.8 : 4;
    const p99Ratio = store.p99 / raw.p99;
    lines.push(
      `- ${scenario}: throughput ${fmt(ratio, 2)}× raw (goal ≥ ${throughputGoal}×) ${verdict(ratio >= throughputGoal)}; p99 ${fmt(p99Ratio, 2)}× raw (goal ≤ 1.5×) ${verdict(p99Ratio <= 1.5)}.`,
    );
  }
  lines.push(
    "",
    "What shapes these numbers:",
    "- Appends to ONE stream from many callers are group-committed: appends queued behind an in-flight publish go out",
    "  together as the next JetStream message (each append still contiguous and all-or-nothing inside it). That is why",
    "  the store beats raw publishing on one stream, where raw sends one message per event.",
    "- Appends to MANY streams cannot share a message (one subject per stream), so each append is one publish and the",
    "  store pays, per append, what raw publish does not: zod validation of every event, the record encoding, and the",
    "  server's `Nats-Expected-Last-Subject-Sequence` check plus `Nats-Msg-Id` dedup. The store publishes through one",
    "  wildcard ack inbox instead of `js.publish` (which allocates a timer and two stack-capturing errors per request);",
    "  without that the client CPU per append was about twice raw's and the 1000-stream batch-of-1 ratio was ~0.4×.",
    "- A raw batch of 10 is ten messages in flight at once and its call waits for the slowest ack; the store sends the ten",
    "  events as one message. That is why the store's batch-of-10 latency is lower than raw's.",
    "- The tail is stalls, not slow calls: every call in flight waits the same 10–30 ms at once — a GC scavenge in this",
    "  process, a pause in nats-server, or the two of them competing for the machine's cores. A round lasts about 0.1 s,",
    "  so whether a stall falls inside it decides that round's p99 (the \"round p99\" columns); the p99 over all rounds",
    "  is the steadier figure. The table below isolates what the server adds for the headers every store append carries:",
    "  plain `js.publish` to 1 000 subjects, then with the headers (the expected sequence kept right per subject from the",
    "  acks), alternating 3 rounds each, no store code involved.",
    "",
    "| raw js.publish, 1 000 subjects | calls | p50 ms | p99 ms | max ms | calls ≥ 10 ms |",
    "|---|---:|---:|---:|---:|---:|",
    ...checks.map((c) => `| ${c.variant} | ${fmt(c.calls)} | ${fmt(c.p50, 2)} | ${fmt(c.p99, 2)} | ${fmt(c.max, 1)} | ${fmt(c.slowCalls)} |`),
  );
  lines.push(
    "",
    `Reads: one stream of ${fmt(LONG_STREAM_EVENTS)} events in batches of 10, interleaved with another stream (${fmt(reads.messages)} JetStream messages, seeded in ${fmt(reads.seedMs / 1000, 1)} s).`,
    "`read(path, { fromOffset: K, limit: 100 })`, 50 timed runs after 10 warm-ups. The batch holding K is found by binary",
    "search over stream sequences with direct get `next_by_subj` (O(log messages) round trips), then the records are read",
    "by direct gets. The cost grows with log2 of the JetStream stream's message count, not with K (a scan from the start",
    "would be the full read below):",
    "",
    "| K | p50 ms | p99 ms |",
    "|---:|---:|---:|",
    ...reads.fromOffset.map((r) => `| ${fmt(r.k)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} |`),
    "",
    `Reading the whole stream (${fmt(LONG_STREAM_EVENTS)} events) takes ${fmt(reads.fullReadMs)} ms.`,
  );
  return lines.join("\n");
}

/** Replaces (or appends) the `## Event store` section, leaving other sections untouched. */
function writeSection(report: string): void {
  const file = fileURLToPath(new URL("../../BENCHMARKS.md", import.meta.url));
  const current = existsSync(file) ? readFileSync(file, "utf8") : "# Benchmarks\n";
  const start = current.indexOf("## Event store");
  let next: string;
  if (start === -1) next = `${current.trimEnd()}\n\n${report}\n`;
  else {
    const after = current.indexOf("\n## ", start + 1);
    next = `${current.slice(0, start)}${report}\n${after === -1 ? "" : `\n${current.slice(after + 1)}`}`;
  }
  writeFileSync(file, next);
}

await main();
