// Agent core benchmark: fold throughput, and the cost of rendering the last request of a long
// stream from scratch versus incrementally (request N+1 after request N). The goal is that
// request N+1 costs O(new events), not O(stream): the incremental column must stay flat as
// the stream grows while the full column grows with it.
//
// Run: pnpm exec tsx bench/core/core.bench.ts

import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { isDeepStrictEqual } from "node:util";
import type { AgentEvent } from "@agentrt/contract";
import {
  StepwiseFold,
  StreamRequestRenderer,
  foldAgentEvent,
  foldAgentEvents,
  initialAgentState,
  renderRequest,
  renderRequestAt,
} from "@agentrt/agent-core";
import { syntheticStream } from "./stream.ts";

const PATH = "/agents/bench/core";

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function timeMs(fn: () => void): number {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

// The machine is shared with other work, so a run's time is its own cost plus whatever else
// was scheduled: the best of many runs estimates the cost itself, the median shows the noise.
function repeat(runs: number, fn: () => void): { best: number; median: number } {
  for (let i = 0; i < 3; i += 1) fn(); // warm-up
  const samples = Array.from({ length: runs }, () => timeMs(fn));
  return { best: Math.min(...samples), median: median(samples) };
}

function machine(): string {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const model = /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1]?.trim() ?? "unknown CPU";
  return `nproc ${availableParallelism()}, ${model}, Node ${process.version}`;
}

const fmt = (n: number, digits = 2) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

const { events: all, requestOffsets: allRequests } = syntheticStream(10_000);

// --- fold throughput ---------------------------------------------------------------------
const streamOf10k = all.slice(0, 10_000);
const batchMs = repeat(15, () => void foldAgentEvents(initialAgentState(PATH), streamOf10k));
const liveMs = repeat(15, () => {
  let state = initialAgentState(PATH);
  for (const event of streamOf10k) state = foldAgentEvent(state, event);
});
const stepwiseMs = repeat(15, () => {
  const fold = new StepwiseFold(initialAgentState(PATH));
  for (const event of streamOf10k) fold.apply(event);
});

// --- a hostile stream: one key's flood of messages, or of distinct keyed sections ---------
// What an append-only key can write (red-team, 2026-12-07): the reducer folded it event by event.
const at = (offset: number) => new Date(Date.UTC(2026, 11, 7, 0, 0, 0, offset)).toISOString();
function flood(count: number, keyed: boolean): AgentEvent[] {
  const events: AgentEvent[] = [{ streamPath: PATH, offset: 1, createdAt: at(1), type: "agent/created", payload: {} } as AgentEvent];
  for (let offset = 2; offset <= count + 1; offset += 1) {
    const payload = keyed
      ? { role: "system", key: `k${offset}`, content: "x" }
      : { role: "user", content: "x", llmRequestPolicy: { behaviour: "dont-trigger-request" } };
    events.push({ streamPath: PATH, offset, createdAt: at(offset), type: "agents/context-added", payload } as AgentEvent);
  }
  return events;
}
interface FloodRow {
  readonly what: string;
  readonly events: number;
  readonly perEventMs: { best: number; median: number };
  readonly stepwiseMs: { best: number; median: number };
  readonly batchMs: { best: number; median: number };
}
function floodRow(what: string, events: AgentEvent[]): FloodRow {
  const runs = (fn: () => void) => {
    fn(); // warm-up
    const samples = Array.from({ length: 3 }, () => timeMs(fn));
    return { best: Math.min(...samples), median: median(samples) };
  };
  return {
    what,
    events: events.length,
    perEventMs: runs(() => {
      let state = initialAgentState(PATH);
      for (const event of events) state = foldAgentEvent(state, event);
    }),
    stepwiseMs: runs(() => {
      const fold = new StepwiseFold(initialAgentState(PATH));
      for (const event of events) fold.apply(event);
    }),
    batchMs: runs(() => void foldAgentEvents(initialAgentState(PATH), events)),
  };
}
const floodRows = [floodRow("messages", flood(20_000, false)), floodRow("distinct keyed sections", flood(20_000, true))];

// --- rendering the last request: full vs incremental --------------------------------------
interface RenderRow {
  size: number;
  request: number;
  items: number;
  messages: number;
  foldAndRenderMs: { best: number; median: number };
  renderOnlyMs: { best: number; median: number };
  incrementalMs: { best: number; median: number };
  newEvents: number;
}

function renderRow(size: number): RenderRow {
  const requests = allRequests.filter((r) => r <= size);
  const last = requests.at(-1) as number;
  const previous = requests.at(-2) as number;
  const events = all.slice(0, last);
  const stateAtLast = foldAgentEvents(initialAgentState(PATH), events);
  const full = renderRequest(stateAtLast);

  const foldAndRenderMs = repeat(21, () => void renderRequestAt(events, last));
  const renderOnlyMs = repeat(21, () => void renderRequest(stateAtLast));

  // Incremental: a driver that rendered request N renders N+1 from the new events only.
  const newEvents = all.slice(previous, last); // offsets previous+1 … last (offsets are dense from 1)
  const samples: number[] = [];
  for (let i = 0; i < 24; i += 1) {
    const renderer = new StreamRequestRenderer(PATH);
    renderer.renderAt(all.slice(0, previous), previous);
    let messages: unknown;
    samples.push(timeMs(() => (messages = renderer.renderAt(newEvents, last))));
    if (!isDeepStrictEqual(messages, full)) throw new Error(`incremental render of @${last} differs from the full render`);
  }
  return {
    size,
    request: last,
    items: stateAtLast.contextItems.length,
    messages: full.length,
    foldAndRenderMs,
    renderOnlyMs,
    incrementalMs: { best: Math.min(...samples.slice(3)), median: median(samples.slice(3)) },
    newEvents: newEvents.length,
  };
}

const rows = [1_000, 2_500, 5_000, 10_000].map(renderRow);

// --- report -------------------------------------------------------------------------------
const lines: string[] = [];
lines.push(`Machine: ${machine()}. Load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(", ")}.`);
lines.push("");
const both = (t: { best: number; median: number }, digits = 2) => `${fmt(t.best, digits)} / ${fmt(t.median, digits)}`;
lines.push("| fold | events | best / median ms | events/s (best) |");
lines.push("|---|---:|---:|---:|");
lines.push(`| \`foldAgentEvents\` (rebuild from the stream) | 10,000 | ${both(batchMs)} | ${fmt(10_000 / (batchMs.best / 1000), 0)} |`);
lines.push(`| \`foldAgentEvent\` one at a time (the reducer before 2026-12-07) | 10,000 | ${both(liveMs)} | ${fmt(10_000 / (liveMs.best / 1000), 0)} |`);
lines.push(`| \`StepwiseFold\` one at a time (the reducer, the audit) | 10,000 | ${both(stepwiseMs)} | ${fmt(10_000 / (stepwiseMs.best / 1000), 0)} |`);
lines.push("");
lines.push("| flood | events | `foldAgentEvent` per event ms | `StepwiseFold` ms | `foldAgentEvents` ms | per event ÷ stepwise |");
lines.push("|---|---:|---:|---:|---:|---:|");
lines.push("| | | best / median | best / median | best / median | (best) |");
for (const r of floodRows) {
  lines.push(`| ${r.what} | ${r.events.toLocaleString("en-US")} | ${both(r.perEventMs)} | ${both(r.stepwiseMs)} | ${both(r.batchMs)} | ${fmt(r.perEventMs.best / r.stepwiseMs.best, 0)}× |`);
}
lines.push("");
lines.push("| stream events | last request | context items | messages | fold + full render ms | full render only ms | incremental N+1 ms | new events |");
lines.push("|---:|---:|---:|---:|---:|---:|---:|---:|");
lines.push("| | | | | best / median | best / median | best / median | |");
for (const r of rows) {
  lines.push(
    `| ${r.size.toLocaleString("en-US")} | @${r.request} | ${r.items.toLocaleString("en-US")} | ${r.messages.toLocaleString("en-US")} | ${both(r.foldAndRenderMs)} | ${both(r.renderOnlyMs)} | ${both(r.incrementalMs, 3)} | ${r.newEvents} |`,
  );
}
process.stdout.write(`${lines.join("\n")}\n`);
