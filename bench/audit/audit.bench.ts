// The stream audit on long streams: auditing a 10 000-event stream (every request rendered with
// the incremental renderer to check the cache prefix) against folding the same events, the floor
// any audit pays, in the same run.
//
//   pnpm bench audit [--events 10000] [--runs 20]

import os from "node:os";
import { auditAgentStream, foldAgentEvents, initialAgentState } from "@agentrt/agent-core";
import { syntheticStream } from "../core/stream.ts";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const EVENTS = arg("events", 10_000);
const RUNS = arg("runs", 20);

const { events, requestOffsets } = syntheticStream(EVENTS);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const time = (work: () => void) => {
  const t0 = performance.now();
  work();
  return performance.now() - t0;
};

// Warm both paths, then alternate them so load drifts hit both alike.
const report = auditAgentStream(events);
if (report.violations.length > 0) throw new Error(`the synthetic stream should audit clean: ${JSON.stringify(report.violations.slice(0, 3))}`);
foldAgentEvents(initialAgentState(events[0]!.streamPath), events);
const audit: number[] = [];
const fold: number[] = [];
for (let i = 0; i < RUNS; i += 1) {
  audit.push(time(() => auditAgentStream(events)));
  fold.push(time(() => foldAgentEvents(initialAgentState(events[0]!.streamPath), events)));
}

process.stdout.write(
  [
    `Command: \`pnpm bench audit --events ${EVENTS} --runs ${RUNS}\` — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.`,
    `Machine: nproc ${os.cpus().length}, ${os.cpus()[0]?.model.trim()}, Node ${process.version}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(", ")}.`,
    "",
    "| measure | median ms |",
    "|---|---:|",
    `| audit of ${events.length} events (${requestOffsets.length} requests, ${report.prefixPairsChecked} prefix pairs rendered and compared) | ${median(audit).toFixed(1)} |`,
    `| fold of the same events (baseline) | ${median(fold).toFixed(1)} |`,
    `| audit ÷ fold | ${(median(audit) / median(fold)).toFixed(2)}× |`,
    "",
  ].join("\n"),
);
