// agentrt side by side with LangGraph.js (PostgresSaver), Restate and DBOS Transact, and the
// bare `openai` client as the floor: one shared fake model process (22 tokens at 2 000 tok/s,
// a unique marker per turn), contenders alternated in rounds, each round a fresh process per
// contender (runner.ts) so no contender inherits another's warm state. Prints the tables for
// BENCHMARKS.md; a peer that cannot run is skipped with the reason.
//
//   pnpm bench peers [--rounds 3] [--sequential 50] [--loads 200x5x50,1000x5x100]
//                    [--only agentrt,agentrt-1p,langgraph,restate,dbos,openai] [--no-kill]
//                    [--warm-load 1000x5x100]
//
// --warm-load: every contender runs that load first, unmeasured, so the figures are those of
// warm, long-running processes rather than of the first thousand turns after a start (JIT).
//
// agentrt runs in two shapes: `agentrt` (a reducer and a driver, each its own process, the work
// queue between them) and `agentrt-1p` (one reducer process running its driver, REDUCER_LLM_DRIVER=in-process).
//
// BENCH_CPU_SPLIT=1: each contender's processes' CPU and write system calls per turn, per load
// (runner.ts). BENCH_PROFILE_DIR=/tmp/prof: agentrt's services write CPU profiles there.
// BENCH_NODE_ARGS="--max-semi-space-size=32": node options agentrt's services start with.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { buildServiceBundles, numberArg, percentile } from "../support/run.ts";
import type { RunnerResult } from "./runner.ts";

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, "..", "..");
const stringArg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};

const ROUNDS = numberArg("rounds", 3);
const SEQUENTIAL = numberArg("sequential", 50);
const LOADS = stringArg("loads", "200x5x50,1000x5x100");
const KILL = !process.argv.includes("--no-kill");
const WARM_LOAD = stringArg("warm-load", "");
const ALL = ["agentrt", "agentrt-1p", "langgraph", "restate", "dbos", "openai"] as const;
type Name = (typeof ALL)[number];
const ONLY = stringArg("only", ALL.join(",")).split(",") as Name[];

// agentrt runs from its service bundles (as the quickstart and the image do): build them from the
// current sources first.
if (ONLY.includes("agentrt") || ONLY.includes("agentrt-1p")) {
  buildServiceBundles();
}

const labels: Record<Name, string> = {
  agentrt: "agentrt",
  "agentrt-1p": "agentrt, one process",
  langgraph: "LangGraph (Postgres)",
  restate: "Restate",
  dbos: "DBOS",
  openai: "bare `openai` client",
};

/** The command that runs a contender's runner; Restate's server checks for updates over the
 * network at start, so it, its endpoint and its client run in a namespace with only loopback. */
function runnerCommand(name: Name): string[] {
  // agentrt-1p is agentrt's runner in its other shape (it reads PEER_NAME).
  const node = [process.execPath, "--import", "tsx", join(here, "contenders", `${name === "agentrt-1p" ? "agentrt" : name}.ts`)];
  return name === "restate" ? ["unshare", "--net", "--fork", "bash", "-c", 'ip link set lo up && exec "$@"', "_", ...node] : node;
}

/** Why a contender cannot run here, or undefined. */
function unavailable(name: Name): string | undefined {
  if (name === "langgraph" || name === "dbos") {
    const pg = spawnSync("psql", ["-h", "127.0.0.1", "-U", "postgres", "-Atc", "select 1"], { encoding: "utf8" });
    if (pg.status !== 0) return `PostgreSQL at 127.0.0.1:5432 (user postgres) is not reachable: ${(pg.stderr || pg.error?.message || "").trim()}`;
  }
  if (name === "restate") {
    const ns = spawnSync("unshare", ["--net", "--fork", "bash", "-c", "ip link set lo up && true"], { encoding: "utf8" });
    if (ns.status !== 0) return `cannot make a loopback-only network namespace (needs root, unshare and ip): ${(ns.stderr || ns.error?.message || "").trim()}`;
  }
  return undefined;
}

const dir = mkdtempSync(join(os.tmpdir(), "agentrt-peers-"));
const modelSocket = join(dir, "model.sock");
const model = spawn(process.execPath, ["--import", "tsx", join(here, "model.ts"), modelSocket], { cwd: repoRoot, stdio: ["ignore", "pipe", "inherit"] });
let forward: ChildProcess | undefined;
const modelPort = await new Promise<number>((resolve, reject) => {
  model.once("exit", (code) => reject(new Error(`the fake model exited (${code})`)));
  createInterface({ input: model.stdout! }).on("line", (line) => {
    if (line.startsWith("ready ")) resolve(Number(line.slice(6)));
    else if (line.startsWith("R ")) forward?.stdin?.write(`${line}\n`);
  });
});
const modelUrl = `http://127.0.0.1:${modelPort}/v1`;

async function runOnce(name: Name, round: number): Promise<RunnerResult | string> {
  const [cmd, ...args] = runnerCommand(name);
  const child = spawn(cmd!, args, {
    cwd: repoRoot,
    env: {
      ...process.env,
      PEER_NAME: name,
      PEER_ROUND: String(round),
      PEER_SEQUENTIAL: String(SEQUENTIAL),
      PEER_LOADS: LOADS,
      PEER_WARM_LOAD: WARM_LOAD,
      PEER_KILL: KILL ? "1" : "0",
      PEER_MODEL_URL: modelUrl,
      PEER_MODEL_SOCKET: modelSocket,
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  forward = child;
  child.stdin.on("error", () => undefined);
  let result: RunnerResult | undefined;
  const errors: string[] = [];
  createInterface({ input: child.stdout }).on("line", (line) => {
    if (line.startsWith("RESULT ")) result = JSON.parse(line.slice(7)) as RunnerResult;
    else errors.push(line);
  });
  child.stderr.on("data", (d: Buffer) => {
    const text = d.toString();
    // The runner's BENCH_CPU_SPLIT lines go through as they come.
    for (const line of text.split("\n")) if (line.startsWith("[cpu]")) process.stderr.write(`${line}\n`);
    errors.push(text);
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  forward = undefined;
  return result ?? `exited ${code}: ${errors.join("\n").slice(-1500)}`;
}

const results = new Map<Name, RunnerResult[]>();
const skipped = new Map<Name, string>();
const failures: string[] = [];
const loadAverages: number[][] = [os.loadavg()];
const started = new Date();
for (const name of ONLY) {
  const reason = unavailable(name);
  if (reason !== undefined) skipped.set(name, reason);
}
for (let round = 1; round <= ROUNDS; round += 1) {
  const live = ONLY.filter((n) => !skipped.has(n));
  // Alternate: each round starts with the next contender, so none always runs first or last.
  const order = live.map((_, i) => live[(i + round - 1) % live.length]!);
  for (const name of order) {
    process.stderr.write(`round ${round}: ${name}…\n`);
    const outcome = await runOnce(name, round);
    loadAverages.push(os.loadavg());
    if (typeof outcome === "string") {
      // One failed round leaves the others standing; a contender with no round at all is skipped.
      failures.push(`${labels[name]}, round ${round}: ${outcome.split("\n").filter((l) => /Error|error:/.test(l)).slice(0, 3).join(" ").slice(0, 400) || outcome.slice(-400)}`);
      if (round === ROUNDS && !results.has(name)) skipped.set(name, outcome);
      process.stderr.write(`  ${name} failed: ${outcome}\n`);
    } else {
      results.set(name, [...(results.get(name) ?? []), outcome]);
      process.stderr.write(`  ${JSON.stringify({ ...outcome, sequential: outcome.sequential.length })}\n`);
    }
  }
}
model.kill("SIGTERM");
rmSync(dir, { recursive: true, force: true });

// ---- tables ----
const median = (xs: number[]) => percentile(xs, 50);
interface Row {
  submitToModel?: number;
  acceptToModel?: number;
  storedP50?: number;
  storedP99?: number;
  loads: { tps: number; cpu: number; tpsRange: string }[];
  kill?: string;
  killMs?: number;
}
const rows = new Map<Name, Row>();
const loads = LOADS.split(",").filter(Boolean);
for (const [name, runs] of results) {
  if (skipped.has(name)) continue;
  const seq = runs.flatMap((r) => r.sequential);
  const accept = seq.flatMap((s) => (s.acceptToModel === undefined ? [] : [s.acceptToModel]));
  const kills = runs.flatMap((r) => (r.kill?.recoveredMs === undefined ? [] : [r.kill.recoveredMs]));
  rows.set(name, {
    submitToModel: percentile(seq.map((s) => s.submitToModel), 50),
    ...(accept.length > 0 ? { acceptToModel: percentile(accept, 50) } : {}),
    storedP50: percentile(seq.map((s) => s.submitToStored), 50),
    storedP99: percentile(seq.map((s) => s.submitToStored), 99),
    loads: loads.map((_, i) => {
      const tps = runs.map((r) => r.loads[i]!.turnsPerSecond);
      return { tps: median(tps), cpu: median(runs.map((r) => r.loads[i]!.cpuMsPerTurn)), tpsRange: `${Math.min(...tps).toFixed(0)}–${Math.max(...tps).toFixed(0)}` };
    }),
    ...(kills.length > 0 ? { killMs: median(kills) } : {}),
    kill: runs.map((r) => r.kill?.note).find((n) => n !== undefined),
  });
}
const shown = ONLY.filter((n) => rows.has(n));
const f = (x: number | undefined, digits = 2) => (x === undefined || Number.isNaN(x) ? "–" : x.toFixed(digits));
const killCell = (r: Row) => (r.killMs !== undefined ? `${(r.killMs / 1000).toFixed(2)} s` : r.kill ?? "–");
/** Issue #15's goal for a measure, as agentrt ÷ the best peer: at most (times, CPU) or at least (turns/s). */
type Goal = { readonly atMost: number } | { readonly atLeast: number };
type Measure = { label: string; value: (r: Row) => number | undefined; cell: (r: Row) => string; goal?: Goal };
const measures: Measure[] = [
  { label: "sequential, submit → model receives, p50 ms", value: (r) => r.submitToModel, cell: (r) => f(r.submitToModel), goal: { atMost: 0.5 } },
  { label: "sequential, durable accept → model receives, p50 ms", value: (r) => r.acceptToModel, cell: (r) => f(r.acceptToModel) },
  { label: "sequential, submit → reply durably stored, p50 ms", value: (r) => r.storedP50, cell: (r) => f(r.storedP50, 1), goal: { atMost: 0.7 } },
  { label: "sequential, submit → reply durably stored, p99 ms", value: (r) => r.storedP99, cell: (r) => f(r.storedP99, 1), goal: { atMost: 0.7 } },
  ...loads.flatMap((l, i): Measure[] => {
    const [a, t, c] = l.split("x");
    return [
      { label: `${a} agents × ${t} turns, concurrency ${c}: turns/s`, value: (r) => r.loads[i]?.tps, cell: (r) => (r.loads[i] ? `${f(r.loads[i].tps, 0)} (${r.loads[i].tpsRange})` : "–"), goal: { atLeast: 1.5 } },
      { label: `CPU ms per turn at ${a} × ${t}, all processes`, value: (r) => r.loads[i]?.cpu, cell: (r) => f(r.loads[i]?.cpu, 1), goal: { atMost: 0.6 } },
    ];
  }),
  { label: "handler killed mid-reply: kill → reply stored", value: (r) => r.killMs, cell: killCell, goal: { atMost: 0.35 } },
];
const header = (cols: string[]) => `| measure | ${cols.join(" | ")} |\n|---|${cols.map(() => "---:").join("|")}|`;
const valueTable = [header(shown.map((n) => labels[n])), ...measures.map((m) => `| ${m.label} | ${shown.map((n) => m.cell(rows.get(n)!)).join(" | ")} |`)].join("\n");
const ours: Name[] = ["agentrt", "agentrt-1p"];
const peers = shown.filter((n) => !ours.includes(n) && n !== "openai");
const ratioTables = ours
  .filter((n) => rows.has(n))
  .map((baseName) => {
    const base = rows.get(baseName)!;
    return [
      `Ratios (peer ÷ ${labels[baseName]}; for turns/s above 1× means the peer is faster, for the others below 1× does):`,
      "",
      header(peers.map((n) => `${labels[n]} ÷ ${labels[baseName]}`)),
      ...measures.map((m) => {
        const mine = m.value(base);
        return `| ${m.label} | ${peers.map((n) => { const v = m.value(rows.get(n)!); return mine === undefined || v === undefined ? "–" : `${(v / mine).toFixed(2)}×`; }).join(" | ")} |`;
      }),
    ].join("\n");
  });
// Issue #15's goals: agentrt ÷ the best peer of each row (the fastest, the least CPU, the most turns/s).
const measured = (x: number | undefined): x is number => x !== undefined && !Number.isNaN(x);
const oursShown = ours.filter((n) => rows.has(n));
const goalTable =
  oursShown.length === 0 || peers.length === 0
    ? ""
    : [
        `Issue #15's goals: ${oursShown.map((n) => labels[n]).join(" and ")} ÷ the best peer of each row (bold: met):`,
        "",
        `| measure | goal | best peer | ${oursShown.map((n) => labels[n]).join(" | ")} |\n|---|---:|---|${oursShown.map(() => "---:").join("|")}|`,
        ...measures.flatMap((m) => {
          if (m.goal === undefined) return [];
          const goal = m.goal;
          const higherIsBetter = "atLeast" in goal;
          const best = peers
            .map((n) => ({ n, v: m.value(rows.get(n)!) }))
            .filter((p): p is { n: Name; v: number } => measured(p.v))
            .sort((a, b) => (higherIsBetter ? b.v - a.v : a.v - b.v))[0];
          const cells = oursShown.map((n) => {
            const mine = m.value(rows.get(n)!);
            if (best === undefined || !measured(mine) || best.v === 0) return "–";
            const ratio = mine / best.v;
            const met = higherIsBetter ? ratio >= goal.atLeast : ratio <= goal.atMost;
            return met ? `**${ratio.toFixed(2)}×**` : `${ratio.toFixed(2)}×`;
          });
          const goalCell = higherIsBetter ? `≥ ${goal.atLeast}×` : `≤ ${goal.atMost}×`;
          return [`| ${m.label} | ${goalCell} | ${best === undefined ? "–" : labels[best.n]} | ${cells.join(" | ")} |`];
        }),
      ].join("\n");
const fmtLoad = (l: number[]) => l.map((x) => x.toFixed(2)).join(", ");
const maxLoad = Math.max(...loadAverages.map((l) => l[0]!));
process.stdout.write(
  [
    `Command: \`pnpm bench peers --rounds ${ROUNDS} --sequential ${SEQUENTIAL} --loads ${LOADS}${WARM_LOAD === "" ? "" : ` --warm-load ${WARM_LOAD}`}${KILL ? "" : " --no-kill"}${process.argv.includes("--only") ? ` --only ${ONLY.join(",")}` : ""}\` — ${started.toISOString().slice(0, 16).replace("T", " ")} UTC, ${((Date.now() - started.getTime()) / 60000).toFixed(1)} min.`,
    `Machine: nproc ${os.cpus().length}, ${os.cpus()[0]?.model.trim()}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}, ${os.release()}. Load average at start ${fmtLoad(loadAverages[0]!)}, at the end ${fmtLoad(loadAverages[loadAverages.length - 1]!)}, highest 1-min ${maxLoad.toFixed(2)}.`,
    `${ROUNDS} rounds, contenders alternated; sequential figures pool ${SEQUENTIAL} turns × ${ROUNDS} rounds; throughput (lowest–highest round in brackets), CPU and recovery are the median of the rounds.`,
    "",
    valueTable,
    "",
    ratioTables.length > 0 ? ratioTables.join("\n\n") : "(agentrt did not run: no ratios)",
    "",
    ...(goalTable === "" ? [] : [goalTable, ""]),
    ...failures.map((f) => `Failed round (left out of the figures): ${f}`),
    ...[...skipped].map(([n, why]) => `Skipped ${labels[n]}: ${why.split("\n").slice(-6).join(" ").slice(0, 600)}`),
  ].join("\n") + "\n",
);
process.exit(0);
