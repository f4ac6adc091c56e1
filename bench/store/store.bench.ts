// Event store benchmark: JetStreamEventStore vs raw JetStream `js.publish` of the same event
// payloads, in the same run against one harness-started nats-server; plus the cost of reading
// from offset K of a 100 000-event stream. Prints a markdown report and writes it into the
// `## Event store` section of BENCHMARKS.md.
//
//   pnpm exec tsx bench/store/store.bench.ts

import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { JetStreamEventStore } from "@agentrt/streams";
import { natsServerBinary, startNatsServer } from "@agentrt/testing";
import { type JetStreamClient, jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { describeMachine } from "./machine.ts";
import { type LoadResult, closedLoop, eventsPerSecond, percentile } from "./measure.ts";

const COMMAND = "pnpm exec tsx bench/store/store.bench.ts";
const CONCURRENCY = 32;
const ROUNDS = 5;
const OPS_BATCH_1 = 12_000;
const OPS_BATCH_10 = 3_000;
const STREAMS_MANY = 1000;
const LONG_STREAM_EVENTS = 100_000;

const event = (i: number) => ({
  type: "agents/context-added",
  payload: { role: "user", content: `message ${i}: the quick brown fox jumps over the lazy dog, twice over for a realistic size.` },
});
const encoder = new TextEncoder();

interface Row {
  readonly scenario: string;
  readonly raw: Summary;
  readonly store: Summary;
}

async function main(): Promise<void> {
  const server = await startNatsServer({ serverName: "bench" });
  const nc = await connect({ servers: server.url });
  const rawNc = await connect({ servers: server.url });
  try {
    const store = await JetStreamEventStore.open(nc, { partitionCount: 64 });
    const js = jetstream(rawNc);
    const jsm = await (await import("@nats-io/jetstream")).jetstreamManager(rawNc);
    await jsm.streams.add({ name: "RAW", subjects: ["raw.>"], allow_direct: true });

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
    const reads = await measureReads(store);
    const report = render(rows, reads, describeMachine(natsServerBinary()));
    process.stdout.write(`${report}\n`);
    writeSection(report);
    await store.close();
  } finally {
    await nc.close();
    await rawNc.close();
    await server.stop();
  }
}

/** Raw JetStream: one publish per event (what a store without batching would cost). */
async function runRaw(js: JetStreamClient, batch: number, ops: number, streams: number, round: string): Promise<LoadResult> {
  const payloads = Array.from({ length: 64 }, (_, i) => encoder.encode(JSON.stringify(event(i))));
  const publishes = ops * batch;
  return await closedLoop(publishes, CONCURRENCY, 1, (i) => js.publish(`raw.${round}.${batch}.${streams}.s${i % streams}`, payloads[i % 64]));
}

async function runStore(store: JetStreamEventStore, batch: number, ops: number, streams: number, round: string): Promise<LoadResult> {
  const batches = Array.from({ length: 64 }, (_, i) => Array.from({ length: batch }, (_, j) => event(i * batch + j)));
  return await closedLoop(ops, CONCURRENCY, batch, (i) => store.append(`/bench/${round}/${batch}-${streams}/s${i % streams}`, batches[i % 64] as unknown[]));
}

interface Summary {
  readonly eventsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
}

/**
 * Each figure is the median over rounds: on a shared machine a scheduling burst can spoil one
 * round, and the median keeps that from deciding the comparison.
 */
function combine(rounds: readonly LoadResult[]): Summary {
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  return {
    eventsPerSecond: median(rounds.map(eventsPerSecond)),
    p50: median(rounds.map((r) => percentile(r.latenciesMs, 50))),
    p99: median(rounds.map((r) => percentile(r.latenciesMs, 99))),
  };
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

function render(rows: readonly Row[], reads: ReadFigures, machine: string): string {
  const lines = [
    "## Event store",
    "",
    `Command: \`${COMMAND}\` — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.`,
    `Machine: ${machine}. One harness-started nats-server (file storage, R1) on loopback, shared by both sides; other work was running on the machine.`,
    "",
    `Appends: ${CONCURRENCY} concurrent callers in a closed loop. "raw" is \`js.publish\` of each event's JSON as its own message (no offsets, no`,
    `concurrency check, no idempotency); "store" is \`JetStreamEventStore.append\` of the same event payloads in batches of 1 or 10`,
    "(validation, offsets, `expect.lastSubjectSequence`, `Nats-Msg-Id`). Latency is per call (one raw publish / one append).",
    `Each scenario runs ${ROUNDS} alternating raw/store rounds after a warm-up; every figure is the median over its side's rounds.`,
    `Load average when the run ended: ${loadavg().map((l) => l.toFixed(1)).join(", ")} (1/5/15 min) on ${availableParallelism()} cores.`,
    "",
    "| scenario | raw events/s | store events/s | store/raw | raw p50 ms | raw p99 ms | store p50 ms | store p99 ms | p99 store/raw |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const { scenario, raw, store } of rows) {
    lines.push(
      `| ${scenario} | ${fmt(raw.eventsPerSecond)} | ${fmt(store.eventsPerSecond)} | ${fmt(store.eventsPerSecond / raw.eventsPerSecond, 2)}× | ${fmt(raw.p50, 2)} | ${fmt(raw.p99, 2)} | ${fmt(store.p50, 2)} | ${fmt(store.p99, 2)} | ${fmt(store.p99 / raw.p99, 2)}× |`,
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
    "  server's `Nats-Expected-Last-Subject-Sequence` check (a per-subject last-message lookup, costlier for subjects",
    "  the server has not seen) plus `Nats-Msg-Id` dedup. The store publishes through one wildcard ack inbox instead of",
    "  `js.publish` (which allocates a timer and two stack-capturing errors per request); without that the client CPU",
    "  per append was about twice raw's and the 1000-stream batch-of-1 ratio was ~0.4×.",
    "- Batches of 10 carry 10× the validation work per publish; across 1000 streams that client CPU is the limit.",
    "- Tail latency on this shared 2-core machine is dominated by scheduling stalls (load average above) and GC pauses",
    "  that stall every in-flight call at once; the store allocates more per append (parsed payloads, event objects), so",
    "  it collects somewhat more often (6–8 vs 4 collections per 5 000 calls in a side experiment). p99 moves by 2–3×",
    "  between identical runs, so the p99 ratios are indicative only; p50 is the steadier figure.",
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
