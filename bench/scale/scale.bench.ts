// Scale: many agents, most idle. Creates N agents through the gateway (each a birth batch the
// project worker reacts to), lets them go idle, and reports each service's RSS growth per idle
// agent; then wakes random idle agents (rebuilt from their snapshot plus the events after it)
// and compares their first turn's overhead with a hot agent's, alternating in the same run.
// Baseline for memory in the same run: the same reducer with eviction off (every agent held,
// as before per-agent snapshots), over --baseline-agents agents.
//
// Hot agents must stay resident between their turns: eight of them take turns in rotation, each
// back well within the idle time, and the report counts the rebuilds of the wake phase (one
// per idle agent woken when the hot ones were never evicted).
//
//   pnpm bench scale [--agents 100000] [--baseline-agents 10000] [--wake 1000] [--evict-ms 30000] [--wake-lanes 1]
//
// --wake-lanes L runs L lanes of the wake phase at once, each alternating an idle agent's
// first turn with a hot agent's as the single lane does (every turn waits out the agents'
// 250 ms debounce, so 1 000 wakes take about 10 minutes in one lane). Hot agents are split
// between the lanes, so each stays resident as before; L ≤ --hot.

import { once } from "node:events";
import os from "node:os";
import WebSocket from "ws";
import { jetstreamManager } from "@nats-io/jetstream";
import type { AgentEvent } from "@agentrt/contract";
import { type System, startSystem } from "../../test/support/system.ts";
import { lastUserContent } from "../../test/support/turns.ts";
import { numberArg, percentile, pool, rssKiB } from "../support/run.ts";
import { freeLoopbackPort, userMessage } from "@agentrt/testing";

const AGENTS = numberArg("agents", 100_000);
const BASELINE_AGENTS = numberArg("baseline-agents", 10_000);
const WAKE = numberArg("wake", 1000);
const EVICT_MS = numberArg("evict-ms", 30_000);
const HOT = numberArg("hot", 8);
const WAKE_LANES = Math.max(1, Math.min(numberArg("wake-lanes", 1), HOT));
const DEBOUNCE_MS = 250;
/** Agents created before the "before" measurement, so the services' per-agent structures exist. */
const WARM = 500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const benchStarted = performance.now();
const log = (line: string) => process.stderr.write(`[scale +${((performance.now() - benchStarted) / 1000).toFixed(0)} s] ${line}\n`);

async function reducerMetric(system: System, pattern: RegExp): Promise<number> {
  const reducer = system.processes.byService("agent-reducer")[0]!;
  const text = await (await fetch(`http://127.0.0.1:${reducer.opsPort}/metrics`)).text();
  const match = pattern.exec(text);
  return match ? Number(match[1]) : NaN;
}
const residentAgents = (system: System) => reducerMetric(system, /^agentrt_reducer_resident_agents\{[^}]*\} (\d+)/m);
const foldedEvents = (system: System) => reducerMetric(system, /^agentrt_reducer_events_folded_total\{[^}]*\} (\d+)/m);
const rebuiltAgents = (system: System) => reducerMetric(system, /^agentrt_reducer_retention_total\{what="rebuilt"[^}]*\} (\d+)/m);

/** Each service's V8 heap in use, KiB: what it holds, unlike RSS, which keeps the high-water mark of the creation phase's garbage. */
async function heapUsed(system: System): Promise<Record<"reducer" | "driver" | "gateway", number>> {
  const one = async (service: "agent-reducer" | "llm-driver" | "web-gateway") => {
    const proc = system.processes.byService(service)[0]!;
    const text = await (await fetch(`http://127.0.0.1:${proc.opsPort}/metrics`)).text();
    const match = /^agentrt_nodejs_heap_size_used_bytes\{[^}]*\} (\d+)/m.exec(text);
    return match ? Number(match[1]) / 1024 : NaN;
  };
  return { reducer: await one("agent-reducer"), driver: await one("llm-driver"), gateway: await one("web-gateway") };
}

type Measured = "agent-reducer" | "llm-driver" | "web-gateway";
const MEASURED: readonly Measured[] = ["agent-reducer", "llm-driver", "web-gateway"];

/**
 * Each measured service listens for an inspector on its own loopback port, so the bench can
 * collect its garbage before reading its memory: without that, "heap in use" counts the
 * creation phase's garbage still uncollected (an earlier run reported 11.5 KiB per idle agent
 * where a heap snapshot, which collects first, found 0.3 KiB held).
 */
async function inspectorPorts(): Promise<Record<Measured, number>> {
  return { "agent-reducer": await freeLoopbackPort(), "llm-driver": await freeLoopbackPort(), "web-gateway": await freeLoopbackPort() };
}

/** A full garbage collection in each measured service, through its inspector. */
async function collectGarbage(ports: Record<Measured, number>): Promise<void> {
  for (const service of MEASURED) {
    const [target] = (await (await fetch(`http://127.0.0.1:${ports[service]}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
    const socket = new WebSocket(target!.webSocketDebuggerUrl);
    await once(socket, "open");
    const collected = new Promise<void>((resolve, reject) => {
      socket.on("message", (data) => {
        if ((JSON.parse(String(data)) as { id?: number }).id === 1) resolve();
      });
      socket.on("error", reject);
    });
    socket.send(JSON.stringify({ id: 1, method: "HeapProfiler.collectGarbage" }));
    await collected;
    socket.close();
  }
  await sleep(1000);
}

function rss(system: System): Record<"reducer" | "driver" | "gateway", number> {
  const one = (service: "agent-reducer" | "llm-driver" | "web-gateway") => rssKiB(system.processes.byService(service)[0]?.pid);
  return { reducer: one("agent-reducer"), driver: one("llm-driver"), gateway: one("web-gateway") };
}

async function createAgents(system: System, prefix: string, count: number): Promise<string[]> {
  const paths = Array.from({ length: count }, (_, i) => `/agents/${prefix}/a${i}`);
  const started = performance.now();
  let retried = 0;
  await pool(paths, 64, async (streamPath, i) => {
    // A 503 says "retry later" (NATS timed out under load; an earlier 100 000-agent run died on
    // one at 47 000): retried as a client should. A retried create whose first attempt did commit
    // answers 200 with its originals (or 409 once the project worker's reactions followed it).
    for (let attempt = 1; ; attempt += 1) {
      // A connection reset (a kept-alive socket the gateway closed as it was reused) is retried too.
      const response = await fetch(`${system.gatewayUrl}/v1/agents`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ streamPath }) }).catch((error: unknown) => {
        if (attempt === 5) throw error;
        return undefined;
      });
      if (response === undefined) {
        retried += 1;
        await sleep(500 * attempt);
        continue;
      }
      if (response.status === 201 || (attempt > 1 && (response.status === 200 || response.status === 409))) break;
      if (response.status !== 503 || attempt === 5) throw new Error(`create ${streamPath}: ${response.status} ${await response.text()}`);
      retried += 1;
      await response.arrayBuffer();
      await sleep(500 * attempt);
    }
    if ((i + 1) % 10_000 === 0) log(`${prefix}: created ${i + 1} agents (${((i + 1) / ((performance.now() - started) / 1000)).toFixed(0)}/s; creates retried after a 503 or a reset connection: ${retried})`);
  });
  return paths;
}

/**
 * Waits until the reducer has caught up with the feed (nothing folded for five seconds) and
 * holds at most `atMost` agents. "At most 50 resident" alone is not settled: creation returns
 * long before the reducer has folded the births (under load it lags by minutes, bringing each
 * agent in and out on the way), and a 10 000-agent run measured then found 5 000 agents held a
 * minute later and its first wake turn timed out behind that backlog.
 */
async function settleEvicted(system: System, atMost: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let resident = await residentAgents(system);
  let folded = await foldedEvents(system);
  let quietSince = Date.now();
  let said = Date.now();
  while ((resident > atMost || Date.now() - quietSince < 5000) && Date.now() < deadline) {
    await sleep(1000);
    resident = await residentAgents(system);
    const now = await foldedEvents(system);
    if (now !== folded) quietSince = Date.now();
    folded = now;
    if (Date.now() - said >= 15_000) {
      said = Date.now();
      log(`settling: ${resident} agents resident (waiting for ≤ ${atMost}), ${folded} events folded`);
    }
  }
  if (Date.now() >= deadline) log(`not settled within ${timeoutMs} ms: ${resident} agents resident, ${folded} events folded`);
  await sleep(3000);
  return resident;
}

/**
 * The baseline holds every agent: waits until the reducer has folded all `atLeast` of them
 * (creation returns before the reducer has caught up; at load it lags by minutes). A baseline
 * that does not hold them is no baseline, so it fails instead of reporting (an earlier run
 * reported its memory with 0 agents resident).
 */
async function settleHeld(system: System, atLeast: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let resident = await residentAgents(system);
  let said = Date.now();
  while (!(resident >= atLeast) && Date.now() < deadline) {
    await sleep(1000);
    resident = await residentAgents(system);
    if (Date.now() - said >= 15_000) {
      said = Date.now();
      log(`settling: ${resident} of ${atLeast} agents resident`);
    }
  }
  if (!(resident >= atLeast)) throw new Error(`eviction off: the reducer holds ${resident} agents of the ${atLeast} created within ${timeoutMs} ms; not a baseline`);
  await sleep(3000);
  return residentAgents(system);
}

function modelEnv(evictMs: number): Record<string, string> {
  return {
    LOG_LEVEL: "error",
    // The bench is one client creating agents as fast as the system takes them.
    RATE_LIMIT_PER_SECOND: "100000",
    RATE_LIMIT_BURST: "100000",
    REDUCER_EVICT_IDLE_MS: String(evictMs),
    REDUCER_SNAPSHOT_IDLE_MS: "500",
  };
}

async function measureMemory(evictMs: number, count: number, prefix: string) {
  const ports = await inspectorPorts();
  const system = await startSystem({
    reducers: 1,
    drivers: 1,
    gateway: true,
    model: { defaultReply: (request) => ({ text: `ok: ${lastUserContent(request.body)}`, tokensPerSecond: 5000 }) },
    env: modelEnv(evictMs),
    envFor: (service): Record<string, string> => (service in ports ? { NODE_OPTIONS: `--inspect=127.0.0.1:${ports[service as Measured]}` } : {}),
  });
  try {
    const holding = evictMs > 1e8;
    const settle = (created: number, timeoutMs: number) => (holding ? settleHeld(system, created, timeoutMs) : settleEvicted(system, 50, timeoutMs));
    await createAgents(system, `${prefix}-warm`, WARM);
    await settle(WARM, 120_000);
    await collectGarbage(ports);
    const before = rss(system);
    const heapBefore = await heapUsed(system);
    const started = performance.now();
    await createAgents(system, prefix, count);
    const createSeconds = (performance.now() - started) / 1000;
    const resident = await settle(WARM + count, 600_000);
    await collectGarbage(ports);
    const after = rss(system);
    const heapAfter = await heapUsed(system);
    return { system, before, after, heapBefore, heapAfter, resident, createSeconds };
  } catch (error) {
    await system.stop();
    throw error;
  }
}

// --- 1. Memory with eviction (the default policy, a short idle time) -------------------------
log(`creating ${AGENTS} agents with eviction after ${EVICT_MS} ms idle`);
const evicting = await measureMemory(EVICT_MS, AGENTS, "scale");
const perAgent = (k: "reducer" | "driver" | "gateway", m: typeof evicting, n: number) => (m.after[k] - m.before[k]) / n;
// Said as soon as measured: the wake phase that follows is long.
log(`memory: ${JSON.stringify({ before: evicting.before, after: evicting.after, heapBefore: evicting.heapBefore, heapAfter: evicting.heapAfter, resident: evicting.resident, createSeconds: evicting.createSeconds })}`);

// --- 2. Waking idle agents vs hot agents, alternating -----------------------------------------
const system = evicting.system;
const committedAt = new Map<string, number>();
const replies = new Map<string, () => void>();
// From the head: replaying the creation phase's history (about 16 events per agent, over a
// million at 100 000 agents) before the first reply could be seen is what made the wake phase
// of an earlier 100 000-agent run time out ("hang") at its very first turn.
const head = (await (await jetstreamManager(system.nc)).streams.info(system.store.streamName)).state.last_seq;
const feed = system.store.feed({ afterSequence: head });
void (async () => {
  for await (const batch of feed) {
    for (const e of batch.events as AgentEvent[]) {
      if (e.type === "agents/context-added" && e.payload.role === "assistant") replies.get(e.payload.content.replace(/^ok: /, ""))?.();
    }
  }
})();
async function turn(path: string, content: string): Promise<number> {
  // A turn that never answers is a failure to report, not a reason to hang the bench.
  const answered = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no reply to "${content}" within 60 s`)), 60_000);
    replies.set(content, () => {
      clearTimeout(timer);
      resolve();
    });
  });
  const sent = await system.store.append(path, [userMessage(content)]);
  committedAt.set(content, Date.parse(sent.events[0]!.createdAt));
  await answered.catch(async (error: unknown) => {
    const events = await system.store.read(path);
    log(`${path}: ${JSON.stringify(events.slice(-10).map((e) => [e.offset, e.type, e.createdAt.slice(11, 23)]))}`);
    throw error;
  });
  replies.delete(content);
  const request = system.model.requests.findLast((r) => lastUserContent(r.body) === content);
  // The project worker configures every agent it births with a 250 ms debounce: the runtime's
  // overhead is what comes on top of that deliberate wait.
  return request === undefined ? NaN : request.receivedAtMs - committedAt.get(content)! - DEBOUNCE_MS;
}
const hot = Array.from({ length: HOT }, (_, i) => `/agents/scale/a${i}`);
const cold = new Set<string>();
const coldOverhead: number[] = [];
const hotOverhead: number[] = [];
let rebuiltDuringWake = NaN;
// A failed turn still stops the system here (the harness would kill it at exit anyway).
try {
  // Each agent's first turn follows the birth reaction; hot agents take one turn first.
  for (const path of hot) await turn(path, `${path} warm-up`);
  const rebuiltBefore = await rebuiltAgents(system);
  while (cold.size < Math.min(WAKE, AGENTS - hot.length)) cold.add(`/agents/scale/a${hot.length + Math.floor(Math.random() * (AGENTS - hot.length))}`);
  const coldList = [...cold];
  let woken = 0;
  log(`waking ${coldList.length} idle agents in ${WAKE_LANES} lane(s)`);
  await Promise.all(
    Array.from({ length: WAKE_LANES }, async (_, lane) => {
      // Lane `lane` takes every WAKE_LANES-th idle agent and its own share of the hot ones.
      const own = hot.filter((_, k) => k % WAKE_LANES === lane);
      for (let k = lane, turnInLane = 0; k < coldList.length; k += WAKE_LANES, turnInLane += 1) {
        const path = coldList[k]!;
        coldOverhead.push(await turn(path, `${path} wake`));
        const h = own[turnInLane % own.length]!;
        hotOverhead.push(await turn(h, `${h} hot ${k}`));
        woken += 1;
        if (woken % 100 === 0) log(`woke ${woken} idle agents`);
      }
    }),
  );
  rebuiltDuringWake = (await rebuiltAgents(system)) - rebuiltBefore;
  // Said as soon as measured, like memory: the baseline that follows can still fail.
  log(`wake: ${JSON.stringify({ hotP50: percentile(hotOverhead, 50), hotP99: percentile(hotOverhead, 99), idleP50: percentile(coldOverhead, 50), idleP99: percentile(coldOverhead, 99), woken: cold.size, rebuiltDuringWake })}`);
} finally {
  await feed.close();
  await system.stop();
}

// --- 3. Baseline: eviction off, every agent held ------------------------------------------------
log(`baseline: ${BASELINE_AGENTS} agents, eviction off`);
const holding = await measureMemory(1e9, BASELINE_AGENTS, "hold");
log(`baseline memory: ${JSON.stringify({ before: holding.before, after: holding.after, heapBefore: holding.heapBefore, heapAfter: holding.heapAfter, resident: holding.resident, createSeconds: holding.createSeconds })}`);
await holding.system.stop();

const kib = (v: number) => v.toFixed(2);
const lines = [
  `Command: \`pnpm bench scale --agents ${AGENTS} --baseline-agents ${BASELINE_AGENTS} --wake ${WAKE} --evict-ms ${EVICT_MS} --wake-lanes ${WAKE_LANES}\` — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.`,
  `Machine: nproc ${os.cpus().length}, ${os.cpus()[0]?.model.trim()}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}; one reducer, one driver, one gateway, one nats-server (R1), the fake model; load average at the end ${os.loadavg().map((l) => l.toFixed(1)).join(", ")}.`,
  "",
  "| measure | eviction on (default policy, idle " + `${EVICT_MS} ms) | eviction off (every agent held) |`,
  "|---|---:|---:|",
  `| agents created (birth batch each, through the gateway) | ${AGENTS} in ${evicting.createSeconds.toFixed(0)} s | ${BASELINE_AGENTS} in ${holding.createSeconds.toFixed(0)} s |`,
  `| agents resident in the reducer after settling | ${evicting.resident} | ${holding.resident} |`,
  `| reducer RSS growth per agent (each reading after a full GC), KiB | ${kib(perAgent("reducer", evicting, AGENTS))} | ${kib(perAgent("reducer", holding, BASELINE_AGENTS))} |`,
  `| driver RSS growth per agent, KiB | ${kib(perAgent("driver", evicting, AGENTS))} | ${kib(perAgent("driver", holding, BASELINE_AGENTS))} |`,
  `| gateway RSS growth per agent, KiB | ${kib(perAgent("gateway", evicting, AGENTS))} | ${kib(perAgent("gateway", holding, BASELINE_AGENTS))} |`,
  `| reducer / driver / gateway V8 heap in use after a full GC, growth per agent, KiB | ${(["reducer", "driver", "gateway"] as const).map((k) => kib((evicting.heapAfter[k] - evicting.heapBefore[k]) / AGENTS)).join(" / ")} | ${(["reducer", "driver", "gateway"] as const).map((k) => kib((holding.heapAfter[k] - holding.heapBefore[k]) / BASELINE_AGENTS)).join(" / ")} |`,
  `| reducer RSS growth per agent, ratio to eviction off | ${(perAgent("reducer", evicting, AGENTS) / perAgent("reducer", holding, BASELINE_AGENTS)).toFixed(3)}× | 1× |`,
  "",
  "| first turn of an agent | p50 ms | p99 ms |",
  "|---|---:|---:|",
  `| hot (in memory), overhead = model received − user committed − the 250 ms debounce | ${percentile(hotOverhead, 50).toFixed(1)} | ${percentile(hotOverhead, 99).toFixed(1)} |`,
  `| idle (evicted; rebuilt from snapshot + tail), same | ${percentile(coldOverhead, 50).toFixed(1)} | ${percentile(coldOverhead, 99).toFixed(1)} |`,
  `| agents rebuilt during the wake phase (idle agents woken: ${cold.size}; more means hot agents were evicted too) | ${rebuiltDuringWake} | |`,
  `| ratio idle ÷ hot | ${(percentile(coldOverhead, 50) / percentile(hotOverhead, 50)).toFixed(2)}× | ${(percentile(coldOverhead, 99) / percentile(hotOverhead, 99)).toFixed(2)}× |`,
];
process.stdout.write(`${lines.join("\n")}\n`);
