// Where a killed driver's recovery goes: the peers bench's kill column (bench/peers, agentrt
// contender) taken apart. A system of nats-server, one reducer and ONE driver, all from their
// bundles as the quickstart runs them; a turn whose first answer streams slowly; 100 ms after
// the model received it the driver is SIGKILLed and started again at once, as a supervisor
// would, and the restarted driver must find the dead one's claim itself. Each phase is stamped
// in epoch ms from the driver's own log lines (its "ready" line carries its start-up phases)
// and the fake model's receive time, and printed as ms after the kill, median over the kills.
//
// With --in-process: nats-server and one reducer that runs its driver (REDUCER_LLM_DRIVER=in-process,
// the peers bench's `agentrt-1p`); the reducer is what is killed, and its restart takes the
// partition leases back, wakes the agents with work pending and hands their requests to its driver.
//
// Run: pnpm bench recovery [--kills 5] [--in-process] [--preload 1000x5]
// BENCH_PROFILE_DIR=/tmp/prof: the services (and the last restart of the killed one) write CPU
// profiles there; BENCH_NODE_ARGS: node options they start with (bench/support/run.ts).

import { loadavg } from "node:os";
import type { AgentEvent } from "@agentrt/contract";
import { type FakeModelRequest, userMessage } from "@agentrt/testing";
import { startSystem } from "../../test/support/system.ts";
import { serviceNodeArgs } from "../support/run.ts";

const argIndex = process.argv.indexOf("--kills");
const KILLS = argIndex > 0 ? Number(process.argv[argIndex + 1]) : 5;
const IN_PROCESS = process.argv.includes("--in-process");
const preloadIndex = process.argv.indexOf("--preload");
/** `<agents>x<turns>`: a load run before the kills (100 agents at a time), as the peers bench's loads leave the system. */
const PRELOAD = preloadIndex > 0 ? (process.argv[preloadIndex + 1] as string) : "0x0";
const [PRELOAD_AGENTS, PRELOAD_TURNS] = PRELOAD.split("x").map(Number) as [number, number];
/** The process killed: the driver's, or the reducer that runs it. */
const KILLED = IN_PROCESS ? "agent-reducer" : "llm-driver";
const MARKER = /mk-[a-z0-9-]+/g;
const markerOf = (body: string) => body.match(MARKER)?.at(-1);

const { args: nodeArgs, profiling } = serviceNodeArgs();
const seen = new Set<string>();
const system = await startSystem({
  reducers: 1,
  drivers: IN_PROCESS ? 0 : 1,
  fromBundles: true,
  ...(nodeArgs.length === 0 ? {} : { nodeArgs }),
  env: { LOG_LEVEL: "error", LLM_CONCURRENCY: "128", ...(IN_PROCESS ? { REDUCER_LLM_DRIVER: "in-process" } : {}) },
  envFor: (service): Record<string, string> => (service === KILLED ? { LOG_LEVEL: "info" } : {}),
  model: {
    // The kill turn streams at 10 tok/s the first time (2.2 s), at full speed when asked again.
    defaultReply: (request: FakeModelRequest) => {
      const marker = markerOf(request.rawBody) ?? "mk-unknown";
      const first = !seen.has(marker);
      seen.add(marker);
      return { tokens: [`re:${marker}`, ...Array.from({ length: 21 }, (_, i) => ` t${i}`)], tokensPerSecond: marker.startsWith("mk-slow-") && first ? 10 : 2000, usage: false };
    },
  },
});

const stored = new Map<string, (at: number) => void>();
const feed = system.store.feed({});
/** The newest feed sequence this bench has seen: the store's head, give or take a batch. */
let head = 0;
void (async () => {
  for await (const batch of feed) {
    const at = Date.now();
    head = batch.sequence;
    for (const e of batch.events as AgentEvent[]) {
      if (e.type === "agents/context-added" && e.payload.role === "assistant") {
        const marker = /^re:(mk-[a-z0-9-]+)/.exec(e.payload.content)?.[1];
        if (marker !== undefined) stored.get(marker)?.(at);
      }
    }
  }
})();
const waitStored = (marker: string) => new Promise<number>((resolve) => stored.set(marker, (at) => { stored.delete(marker); resolve(at); }));
const say = async (agent: string, marker: string) => {
  const reply = waitStored(marker);
  await system.store.append(`/agents/recovery/${agent}`, [userMessage(marker)]);
  return reply;
};
const modelReceived = async (marker: string, nth: number): Promise<number> => {
  for (;;) {
    const hits = system.model.requests.filter((r) => markerOf(r.rawBody) === marker);
    if (hits.length >= nth) return hits[nth - 1]!.receivedAtMs;
    await new Promise((r) => setTimeout(r, 2));
  }
};

type Line = { msg?: string; time?: number; startup?: Record<string, number>; inProcessDriver?: { startup?: Record<string, number> } } & Record<string, unknown>;
const driver = system.processes.byService(KILLED)[0]!;
const phases: Record<string, number[]> = {};
const note = (phase: string, ms: number | undefined) => {
  if (ms !== undefined && Number.isFinite(ms)) (phases[phase] ??= []).push(ms);
};
const loads: string[] = [];

try {
  const preload = Array.from({ length: PRELOAD_AGENTS }, (_, i) => `p${i}`);
  await Promise.all(
    Array.from({ length: Math.min(100, PRELOAD_AGENTS) }, async () => {
      for (let agent = preload.shift(); agent !== undefined; agent = preload.shift()) {
        await system.store.append(`/agents/recovery/${agent}`, [
          { type: "agent/created", payload: {} },
          { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 0 } } },
        ]);
        for (let turn = 0; turn < PRELOAD_TURNS; turn += 1) await say(agent, `mk-${agent}-load${turn}`);
      }
    }),
  );
  for (let k = 0; k < KILLS; k += 1) {
    const agent = `a${k}`;
    await system.store.append(`/agents/recovery/${agent}`, [
      { type: "agent/created", payload: {} },
      { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 0 } } },
    ]);
    await say(agent, `mk-${agent}-warm`);
    const marker = `mk-slow-${agent}`;
    const reply = say(agent, marker);
    await modelReceived(marker, 1);
    await new Promise((r) => setTimeout(r, 100));
    const before = driver.logs().length;
    loads.push(loadavg()[0]!.toFixed(2));
    await driver.signal("SIGKILL");
    const killAt = Date.now();
    const headAtKill = head;
    driver.start();
    const spawnedAt = Date.now();
    const storedAt = await reply;
    const modelAt = await modelReceived(marker, 2);
    await driver.waitReady();
    const lines = driver
      .logs()
      .slice(before)
      .split("\n")
      .flatMap((l): Line[] => {
        try {
          return [JSON.parse(l) as Line];
        } catch {
          return [];
        }
      });
    const at = (msg: string) => lines.find((l) => l.msg === msg)?.time;
    const lastAt = (msg: string) => lines.findLast((l) => l.msg === msg)?.time;
    const ready = lines.find((l) => l.msg === `${KILLED} ready`);
    note("spawn() returned", spawnedAt - killAt);
    for (const [phase, epochMs] of Object.entries(ready?.startup ?? {})) note(`start-up: ${phase}`, epochMs - killAt);
    for (const [phase, epochMs] of Object.entries(ready?.inProcessDriver?.startup ?? {})) note(`its driver's start-up: ${phase}`, epochMs - killAt);
    note("ready logged", at(`${KILLED} ready`)! - killAt);
    if (IN_PROCESS) {
      note("first lease acquired", at("lease acquired")! - killAt);
      note("last lease acquired", lastAt("lease acquired")! - killAt);
      note("last partition resumed from its checkpoint", lastAt("resumed the partition from its checkpoint")! - killAt);
      // How far behind the head the partitions' checkpoints were: the feed replayed after the restart.
      const checkpoints = lines.filter((l) => l.msg === "following the partition from its checkpoint").map((l) => Number(l.sequence));
      if (checkpoints.length > 0) note("oldest checkpoint behind the head (feed batches)", headAtKill - Math.min(...checkpoints));
      // How many agents the checkpoints listed as having work pending (each rebuilt at takeover).
      note("agents woken at takeover (count)", lines.filter((l) => l.msg === "resumed the partition from its checkpoint").reduce((sum, l) => sum + Number(l.pending ?? 0), 0));
    } else {
      note("dead claim handed back", at("the claimant of a work item is gone; handed the item back to the queue")! - killAt);
    }
    note("driving request", at("driving request")! - killAt);
    note("model received", modelAt - killAt);
    note("settled (driver log)", at("request settled: succeeded")! - killAt);
    note("reply stored (feed)", storedAt - killAt);
    process.stdout.write(`kill ${k + 1}/${KILLS} (load ${loads.at(-1)}): kill -> reply stored ${storedAt - killAt} ms\n`);
  }
} finally {
  // A profile (BENCH_PROFILE_DIR) is written when its process exits on its own: the last restart's too.
  if (profiling) for (const p of system.processes.all) await p.signal("SIGTERM");
  await feed.close();
  await system.stop();
}

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const order = Object.entries(phases).sort((a, b) => median(a[1]) - median(b[1]));
process.stdout.write(`\nCommand: pnpm bench recovery --kills ${KILLS}${IN_PROCESS ? " --in-process" : ""}${PRELOAD_AGENTS > 0 ? ` --preload ${PRELOAD}` : ""} — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC; 1-min load average at each kill: ${loads.join(", ")}\n\n`);
process.stdout.write(`| phase (ms after the kill) | median | min | max |\n|---|---:|---:|---:|\n`);
for (const [phase, v] of order) process.stdout.write(`| ${phase} | ${median(v)} | ${Math.min(...v)} | ${Math.max(...v)} |\n`);
process.exit(0);
