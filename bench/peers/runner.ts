// One contender's run, in its own process: the same phases and the same clock for every
// contender. The orchestrator (peers.bench.ts) starts this process once per contender and
// round and feeds it, on stdin, the fake model's `R <marker> <monotonic ms>` lines, so the
// runner knows exactly when the model received each turn. It prints one `RESULT {json}` line.
//
// Phases: warm-up (twelve turns, and the `--warm-load` when given, none measured); sequential
// turns (submit → model receives, durable accept → model receives, submit → reply durably
// stored); two throughput runs (agents × turns at a concurrency, each agent's turns in order);
// CPU over all the contender's processes during each run (from /proc); a turn whose handler is
// SIGKILLed while the model streams.

import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { monotonicMs } from "@agentrt/testing";
import { pool } from "../support/run.ts";

/** The clock every stamp of a run is read from: the machine's monotonic clock, one reading in every process (the model's too). */
export const nowMs = monotonicMs;

/** What a turn's caller saw: when the submission was durably accepted (if the contender has
 * such a moment) and when the reply was durably stored. */
export interface TurnTimes {
  readonly acceptedAt?: number;
  readonly storedAt: number;
}

export interface KillOutcome {
  /** kill → reply stored, ms; undefined when the reply was never stored. */
  readonly recoveredMs?: number;
  readonly note: string;
}

export interface Contender {
  /** Every process of the contender besides this one (servers, handlers, database backends). */
  pids(): Promise<number[]>;
  createAgent(agent: string): Promise<void>;
  turn(agent: string, marker: string): Promise<TurnTimes>;
  /** Submits `marker` to `agent`, waits for `modelReceived`, SIGKILLs the handler process
   * mid-stream (restarting it as a supervisor would) and measures kill → reply stored. */
  killMidReply?(agent: string, marker: string, modelReceived: Promise<number>): Promise<KillOutcome>;
  stop(): Promise<void>;
}

export interface RunnerConfig {
  readonly name: string;
  readonly round: number;
  readonly sequential: number;
  readonly loads: readonly { agents: number; turns: number; concurrency: number }[];
  /** A load run before every measured phase and not measured (`--warm-load`): the steady state of long-running processes. */
  readonly warmLoad?: { agents: number; turns: number; concurrency: number };
  readonly kill: boolean;
  readonly modelUrl: string;
  readonly modelSocket: string;
}

/** `<agents>x<turns>x<concurrency>`. */
function parseLoad(spec: string): { agents: number; turns: number; concurrency: number } {
  const [agents, turns, concurrency] = spec.split("x").map(Number);
  if (![agents, turns, concurrency].every((n) => Number.isInteger(n) && (n as number) > 0)) throw new Error(`a load is <agents>x<turns>x<concurrency> of positive integers, got ${JSON.stringify(spec)}`);
  return { agents: agents!, turns: turns!, concurrency: concurrency! };
}

export function runnerConfig(): RunnerConfig {
  const env = (k: string, d: string) => process.env[k] ?? d;
  return {
    name: env("PEER_NAME", "x"),
    round: Number(env("PEER_ROUND", "1")),
    sequential: Number(env("PEER_SEQUENTIAL", "50")),
    loads: env("PEER_LOADS", "200x5x50,1000x5x100").split(",").filter(Boolean).map(parseLoad),
    ...(env("PEER_WARM_LOAD", "") === "" ? {} : { warmLoad: parseLoad(env("PEER_WARM_LOAD", "")) }),
    kill: env("PEER_KILL", "1") === "1",
    modelUrl: env("PEER_MODEL_URL", ""),
    modelSocket: env("PEER_MODEL_SOCKET", ""),
  };
}

/** CPU time (user + system) of a process in ms, from /proc; 0 when it is gone. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, CLK_TCK 100
  } catch {
    return 0;
  }
}

/** Write system calls a process has made so far (its sockets' sends among them), from /proc; 0 when it is gone. */
function writeCalls(pid: number): number {
  try {
    return Number(/syscw: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** A process's name for the CPU split: its script's or config file's name (`main.bundle.mjs` under its service). */
function processName(pid: number): string {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter((a) => a !== "");
    const last = args.at(-1) ?? "";
    return `${pid} ${last.split("/").slice(-4).join("/")}`;
  } catch {
    return `${pid} (gone)`;
  }
}

/**
 * BENCH_CPU_SPLIT=1: per load, each of the contender's processes' CPU ms and write system calls
 * per turn, on stderr (the orchestrator passes `[cpu]` lines through), to see where a total goes.
 */
const CPU_SPLIT = process.env.BENCH_CPU_SPLIT !== undefined;

/** The model's receive times, from the orchestrator's lines on stdin. */
class ModelLog {
  private readonly times = new Map<string, number>();
  private readonly waiters = new Map<string, (ms: number) => void>();
  constructor() {
    createInterface({ input: process.stdin }).on("line", (line) => {
      const [tag, marker, ms] = line.split(" ");
      if (tag !== "R" || marker === undefined) return;
      if (!this.times.has(marker)) this.times.set(marker, Number(ms));
      this.waiters.get(marker)?.(Number(ms));
    });
  }
  received(marker: string, timeoutMs = 120_000): Promise<number> {
    const t = this.times.get(marker);
    if (t !== undefined) return Promise.resolve(t);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`model never received ${marker}`)), timeoutMs);
      this.waiters.set(marker, (ms) => {
        clearTimeout(timer);
        this.waiters.delete(marker);
        resolve(ms);
      });
    });
  }
}

export interface SequentialSample {
  readonly submitToModel: number;
  readonly acceptToModel?: number;
  readonly submitToStored: number;
}

export interface RunnerResult {
  readonly name: string;
  readonly round: number;
  readonly sequential: SequentialSample[];
  readonly loads: { agents: number; turns: number; concurrency: number; turnsPerSecond: number; cpuMsPerTurn: number }[];
  readonly kill?: KillOutcome;
}

export async function runContender(make: (config: RunnerConfig) => Promise<Contender>): Promise<void> {
  const config = runnerConfig();
  const log = new ModelLog();
  const contender = await make(config);
  const id = `${config.name}-r${config.round}`;
  try {
    // Warm-up: connections, JIT, prepared statements; not measured.
    for (let a = 0; a < 4; a += 1) {
      await contender.createAgent(`${id}-w${a}`);
      for (let t = 0; t < 3; t += 1) await contender.turn(`${id}-w${a}`, `mk-${id}-w${a}-${t}`);
    }
    const warm = config.warmLoad;
    if (warm !== undefined) {
      const agents = Array.from({ length: warm.agents }, (_, i) => `${id}-wl${i}`);
      await pool(agents, Math.min(50, warm.concurrency), (agent) => contender.createAgent(agent));
      await pool(agents, warm.concurrency, async (agent) => {
        for (let t = 0; t < warm.turns; t += 1) await contender.turn(agent, `mk-${agent}-t${t}`);
      });
    }

    const sequential: SequentialSample[] = [];
    for (let i = 0; i < config.sequential; i += 1) {
      const agent = `${id}-s${Math.floor(i / 5)}`;
      if (i % 5 === 0) await contender.createAgent(agent);
      const marker = `mk-${id}-s${i}`;
      const submitAt = nowMs();
      const times = await contender.turn(agent, marker);
      const modelAt = await log.received(marker);
      sequential.push({
        submitToModel: modelAt - submitAt,
        ...(times.acceptedAt === undefined ? {} : { acceptToModel: modelAt - times.acceptedAt }),
        submitToStored: times.storedAt - submitAt,
      });
    }

    const loads: RunnerResult["loads"][number][] = [];
    for (const [n, load] of config.loads.entries()) {
      const agents = Array.from({ length: load.agents }, (_, i) => `${id}-l${n}a${i}`);
      await pool(agents, Math.min(50, load.concurrency), (agent) => contender.createAgent(agent));
      const before = new Map((await contender.pids()).map((p) => [p, cpuMs(p)]));
      const writesBefore = new Map([...before.keys()].map((p) => [p, writeCalls(p)]));
      const selfBefore = process.cpuUsage();
      const start = nowMs();
      await pool(agents, load.concurrency, async (agent) => {
        for (let t = 0; t < load.turns; t += 1) await contender.turn(agent, `mk-${agent}-t${t}`);
      });
      const seconds = (nowMs() - start) / 1000;
      const self = process.cpuUsage(selfBefore);
      // A process that appeared during the run (a pool opening another connection) counts whole.
      const after = new Set([...before.keys(), ...(await contender.pids())]);
      const cpu = [...after].reduce((s, p) => s + Math.max(0, cpuMs(p) - (before.get(p) ?? 0)), 0) + (self.user + self.system) / 1000;
      const turns = load.agents * load.turns;
      if (CPU_SPLIT) {
        const perTurn = [...after].map((p) => `  ${processName(p)}: ${((cpuMs(p) - (before.get(p) ?? 0)) / turns).toFixed(2)} CPU ms, ${((writeCalls(p) - (writesBefore.get(p) ?? 0)) / turns).toFixed(1)} writes`);
        process.stderr.write(`[cpu] ${load.agents} × ${load.turns}, per turn:\n${perTurn.map((l) => `[cpu] ${l}\n`).join("")}[cpu]   this runner: ${((self.user + self.system) / 1000 / turns).toFixed(2)} CPU ms\n`);
      }
      loads.push({ ...load, turnsPerSecond: turns / seconds, cpuMsPerTurn: cpu / turns });
    }

    let kill: KillOutcome | undefined;
    if (config.kill && contender.killMidReply) {
      const agent = `${id}-k`;
      await contender.createAgent(agent);
      await contender.turn(agent, `mk-${id}-k0`);
      const marker = `mk-slow-${id}-k1`;
      kill = await contender.killMidReply(agent, marker, log.received(marker));
    } else if (config.kill) {
      kill = { note: "not applicable" };
    }
    const result: RunnerResult = { name: config.name, round: config.round, sequential, loads, ...(kill ? { kill } : {}) };
    process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
  } finally {
    await contender.stop();
  }
  process.exit(0);
}

/** Polls `check` every `intervalMs` until it is true or `timeoutMs` passes. */
export async function until(check: () => Promise<boolean>, timeoutMs: number, intervalMs = 10): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  return false;
}
