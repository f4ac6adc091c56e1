// Load: 1 000 agents each taking 5 turns against the fake model, every service a real
// process on one nats-server. Reports turns/s, turn overhead p50/p99 (the model received the
// request − the user message was committed; the debounce is 0) and memory per agent (reducer
// and driver RSS growth / agents). Baseline in the same run: the `openai` client calling the
// same fake model directly with the same concurrency, i.e. what a turn costs with no runtime.
//
//   pnpm exec tsx bench/load/load.bench.ts [--agents 1000] [--turns 5] [--concurrency 100]
//
// Two more modes, for issue #18:
//   --compare-retention R   R rounds alternating the reducer as before per-agent retention
//                           (eviction and snapshots off by config: every agent held, nothing
//                           written) with the default policy; throughput ratio per round.
//   --kill-reducer          two reducers; once 95 % of the turns are answered, the one owning
//                           most partitions is SIGKILLed: how long until its partitions serve
//                           again (an idle agent's message sent at the kill → its request
//                           committed), and whether every turn in flight is still answered.

import os from "node:os";
import OpenAI from "openai";
import { jetstreamManager } from "@nats-io/jetstream";
import type { AgentEvent } from "@agentrt/contract";
import { DEFAULT_LEASE_TTL_MS } from "@agentrt/service-kit";
import { partitionOfPath } from "@agentrt/streams";
import { PARTITIONS, type System, startSystem } from "../../test/support/system.ts";
import { numberArg, percentile, pool, rssKiB } from "../support/run.ts";
import { lastUserContent } from "../../test/support/turns.ts";
import { userMessage } from "@agentrt/testing";

const AGENTS = numberArg("agents", 1000);
const TURNS = numberArg("turns", 5);
const CONCURRENCY = numberArg("concurrency", 100);
const COMPARE_ROUNDS = numberArg("compare-retention", 0);
const KILL = process.argv.includes("--kill-reducer");
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? "error";

const rssMb = (pid: number | undefined) => rssKiB(pid) / 1024;
const log = (line: string) => process.stderr.write(`[load] ${line}\n`);
const when = () => new Date().toISOString().slice(0, 16).replace("T", " ");
const machine = (topology: string) =>
  `Machine: nproc ${os.cpus().length}, ${os.cpus()[0]?.model.trim()}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}; ${topology}, one nats-server (R1), the fake model; load average at the end ${os.loadavg().map((l) => l.toFixed(1)).join(", ")}.`;

/** The reducer as before per-agent retention: nothing evicted, no agent snapshot written. */
const NO_RETENTION = { REDUCER_EVICT_IDLE_MS: String(2 ** 31 - 1), REDUCER_SNAPSHOT_IDLE_MS: String(2 ** 31 - 1), REDUCER_SNAPSHOT_EVERY_EVENTS: String(2 ** 31 - 1) };

async function metricSum(system: System, name: string, labels: string): Promise<number> {
  let sum = 0;
  for (const reducer of system.processes.byService("agent-reducer").filter((r) => r.running)) {
    const text = await (await fetch(`http://127.0.0.1:${reducer.opsPort}/metrics`)).text();
    for (const line of text.split("\n")) if (line.startsWith(`${name}{`) && line.includes(labels)) sum += Number(line.split(" ").at(-1));
  }
  return sum;
}

/** Who holds each partition lease (read straight from the lease bucket's stream). */
async function leaseOwners(system: System): Promise<Map<number, string>> {
  const jsm = await jetstreamManager(system.nc);
  const owners = new Map<number, string>();
  for (let p = 0; p < PARTITIONS; p += 1) {
    const message = await jsm.streams.getMessage("KV_agentrt_leases", { last_by_subj: `$KV.agentrt_leases.reducer.partition.${p}` }).catch(() => null);
    if (message !== null && message.data.length > 0) owners.set(p, (message.json() as { owner: string }).owner);
  }
  return owners;
}

/**
 * The bench's own message a model request answers: its last user-role message that the bench
 * sent (an error transcribed after it is a user-role message too, and is not a turn).
 */
function lastBenchMessage(body: unknown, sent: ReadonlyMap<string, number>): string {
  const messages = (body as { messages?: Array<{ role: string; content: unknown }> }).messages ?? [];
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const { role, content } = messages[i]!;
    if (role === "user" && typeof content === "string" && sent.has(content)) return content;
  }
  return "";
}

interface LoadRun {
  readonly seconds: number;
  readonly turnLatency: number[];
  readonly overhead: number[];
  readonly rss: { reducer: number; drivers: number };
  readonly snapshots: number;
  /** Turns whose request failed (the driver's error message each). */
  readonly failed: readonly string[];
  readonly kill?: { victimPartitions: number; inFlight: number; servingAgainMs: number; unanswered: number };
}

/** Creates the agents, runs every turn, and reports; `kill` SIGKILLs a reducer at 95 % of the turns. */
async function runLoad(system: System, prefix: string, kill: boolean): Promise<LoadRun> {
  // A turn is answered by the first reply (or failed request) on its agent's stream after its
  // user message, matched by stream and offset, not by the reply's text: the fake model echoes
  // the request's last user-role message, and that is not always the bench's (after a failed
  // request the reducer transcribes the error as an integration's message, rendered as a user
  // message, and it can land after the next turn's message: its reply then echoes the error).
  /** Per agent, the turn in flight (one at a time): its user message's offset once committed. */
  const waiting = new Map<string, { userOffset?: number; answer: () => void }>();
  /** Per agent, the offset of the last reply or failed request seen, for a turn whose answer came before its own append returned. */
  const lastAnswer = new Map<string, number>();
  const failedTurns: string[] = [];
  const userCommittedAt = new Map<string, number>();
  const modelRequestsBefore = system.model.requests.length;
  const feed = system.store.feed({});
  const onAnswer = (path: string, offset: number) => {
    lastAnswer.set(path, offset);
    const turn = waiting.get(path);
    if (turn?.userOffset !== undefined && offset > turn.userOffset) turn.answer();
  };
  void (async () => {
    for await (const batch of feed) {
      for (const e of batch.events as AgentEvent[]) {
        if (e.type === "agents/context-added" && e.payload.role === "assistant") onAnswer(batch.streamPath, e.offset);
        // A request that failed ends its turn without a reply: counted and reported, not waited for.
        if (e.type === "agent/llm-request-settled" && e.payload.result.status === "failed") {
          failedTurns.push(e.payload.result.errorMessage);
          onAnswer(batch.streamPath, e.offset);
        }
      }
    }
  })();
  const reducers = system.processes.byService("agent-reducer");
  const drivers = system.processes.byService("llm-driver");
  const rssBefore = { reducer: reducers.reduce((n, r) => n + rssMb(r.pid), 0), drivers: drivers.reduce((n, d) => n + rssMb(d.pid), 0) };
  const paths = Array.from({ length: AGENTS }, (_, i) => `/agents/${prefix}/a${i}`);
  const probes = Array.from({ length: 4 * PARTITIONS }, (_, i) => `/agents/${prefix}/probe${i}`);
  await pool([...paths, ...(kill ? probes : [])], 50, async (path) => {
    await system.store.append(path, [
      { type: "agent/created", payload: {} },
      { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 0 } } },
    ]);
  });

  /** Sends one message and waits for its reply (a turn that never answers fails the bench). */
  const turn = async (path: string, content: string): Promise<AgentEvent> => {
    let answer = () => {};
    const reply = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to "${content}" within 120 s`)), 120_000);
      answer = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    reply.catch(() => undefined); // awaited below; a timeout before then is not unhandled
    const inFlight: { userOffset?: number; answer: () => void } = { answer };
    waiting.set(path, inFlight);
    const sent = await system.store.append(path, [userMessage(content)]);
    const userOffset = sent.events[0]!.offset;
    userCommittedAt.set(content, Date.parse(sent.events[0]!.createdAt));
    inFlight.userOffset = userOffset;
    if ((lastAnswer.get(path) ?? 0) > userOffset) answer();
    await reply.catch(async (error: unknown) => {
      if (!diagnosed) {
        diagnosed = true;
        const events = await system.store.read(path);
        log(`${path}: ${JSON.stringify(events.slice(-12).map((e) => [e.offset, e.type, e.createdAt.slice(11, 23)]))}`);
        for (const p of system.processes.byService("agent-reducer")) log(`--- ${p.name}\n${p.logs().split("\n").filter((l) => !l.includes('"level":30') || l.includes("lease") || l.includes("resumed")).slice(-40).join("\n")}`);
      }
      throw error;
    });
    waiting.delete(path);
    return sent.events[0]!;
  };

  const turns = AGENTS * TURNS;
  let diagnosed = false;
  let answered = 0;
  let snapshots = NaN;
  let killed: Promise<LoadRun["kill"]> | undefined;
  const turnLatency: number[] = [];
  const start = performance.now();
  const killAt = () => {
    killed = (async () => {
      snapshots = await metricSum(system, "agentrt_reducer_retention_total", 'what="snapshot"');
      const turnsInFlight = waiting.size;
      const counts = new Map<string, number[]>();
      for (const [p, owner] of await leaseOwners(system)) counts.set(owner, [...(counts.get(owner) ?? []), p]);
      const [victimId, partitions] = [...counts].sort((a, b) => b[1].length - a[1].length)[0]!;
      await system.processes.all.find((p) => p.name === victimId)!.signal("SIGKILL");
      const killedAt = Date.now();
      log(`killed ${victimId} (${partitions.length} partitions) with ${turnsInFlight} turns in flight`);
      const probe = probes.find((path) => partitions.includes(partitionOfPath(path, PARTITIONS)))!;
      const sent = await turn(probe, `${probe} at the kill`);
      const request = (await system.store.read(probe)).find((e) => e.type === "agent/llm-request-requested" && e.idempotencyKey === `agent/request/${sent.offset}`);
      // Where the time went: the survivor's lease and resume lines (with BENCH_LOG_LEVEL=info), relative to the kill.
      for (const p of system.processes.byService("agent-reducer").filter((r) => r.running)) {
        for (const line of p.logs().split("\n")) {
          const entry = /"time":(\d+)/.exec(line);
          if (entry && Number(entry[1]) >= killedAt && /lease|resumed/.test(line)) log(`+${Number(entry[1]) - killedAt} ms ${p.name}: ${line.replace(/.*"msg":/, "")} ${/"pending":\d+,"tookMs":\d+/.exec(line)?.[0] ?? ""}`);
        }
      }
      return { victimPartitions: partitions.length, inFlight: turnsInFlight, servingAgainMs: request === undefined ? NaN : Date.parse(request.createdAt) - killedAt, unanswered: 0 };
    })();
  };
  let failure: unknown;
  try {
    await pool(paths, CONCURRENCY, async (path) => {
      for (let t = 1; t <= TURNS; t += 1) {
        const t0 = performance.now();
        await turn(path, `${path} turn ${t}`);
        turnLatency.push(performance.now() - t0);
        answered += 1;
        if (kill && killed === undefined && answered >= turns * 0.95) killAt();
      }
    });
  } catch (error) {
    failure = error;
  }
  const seconds = (performance.now() - start) / 1000;
  if (!kill) snapshots = await metricSum(system, "agentrt_reducer_retention_total", 'what="snapshot"');
  const killFigures = await killed;
  await feed.close();
  if (failure !== undefined) throw failure;
  const rss = { reducer: reducers.reduce((n, r) => n + (r.running ? rssMb(r.pid) : 0), 0), drivers: drivers.reduce((n, d) => n + rssMb(d.pid), 0) };
  const overhead = system.model.requests.slice(modelRequestsBefore).flatMap((r) => {
    const committed = userCommittedAt.get(lastBenchMessage(r.body, userCommittedAt));
    return committed === undefined ? [] : [r.receivedAtMs - committed];
  });
  return {
    seconds,
    turnLatency,
    overhead,
    rss: { reducer: rss.reducer - rssBefore.reducer, drivers: rss.drivers - rssBefore.drivers },
    snapshots,
    failed: failedTurns,
    ...(killFigures === undefined ? {} : { kill: { ...killFigures, unanswered: turns - answered } }),
  };
}

const modelOptions = { defaultReply: (request: { body: unknown }) => ({ text: `ok: ${lastUserContent(request.body)}`, tokensPerSecond: 2000 }) };
const turnsTotal = AGENTS * TURNS;
const f1 = (v: number) => v.toFixed(1);

if (COMPARE_ROUNDS > 0) {
  // Alternating, each run on a fresh system, so drift in the machine's load hits both alike.
  const rows: string[] = [];
  const rates = { before: [] as number[], now: [] as number[] };
  for (let round = 1; round <= COMPARE_ROUNDS; round += 1) {
    for (const variant of round % 2 === 1 ? (["before", "now"] as const) : (["now", "before"] as const)) {
      const system = await startSystem({ reducers: 1, drivers: 2, model: modelOptions, env: { LOG_LEVEL: LOG_LEVEL, LLM_CONCURRENCY: "128", ...(variant === "before" ? NO_RETENTION : {}) } });
      try {
        log(`round ${round}: ${variant}`);
        const run = await runLoad(system, `load-${variant}-${round}`, false);
        rates[variant].push(turnsTotal / run.seconds);
        rows.push(
          `| ${round} | ${variant === "before" ? "retention off (as before #18)" : "default retention"} | ${f1(turnsTotal / run.seconds)} | ${f1(percentile(run.overhead, 50))} / ${f1(percentile(run.overhead, 99))} | ${run.snapshots} | ${f1((run.rss.reducer * 1024) / AGENTS)} | ${run.failed.length} |`,
        );
      } finally {
        await system.stop();
      }
    }
  }
  const sum = (v: number[]) => v.reduce((a, b) => a + b, 0);
  const lines = [
    `Command: \`pnpm exec tsx bench/load/load.bench.ts --agents ${AGENTS} --turns ${TURNS} --concurrency ${CONCURRENCY} --compare-retention ${COMPARE_ROUNDS}\` — ${when()} UTC.`,
    machine("one reducer, two drivers"),
    "",
    "| round | reducer | turns/s | turn overhead p50 / p99, ms | agent snapshots written during the load | reducer RSS growth per agent, KiB | turns whose request failed |",
    "|---:|---|---:|---:|---:|---:|---:|",
    ...rows,
    "",
    `Throughput, default retention ÷ retention off: ${rates.now.map((r, i) => (r / rates.before[i]!).toFixed(2)).join(", ")} per round; ${(sum(rates.now) / sum(rates.before)).toFixed(2)}× over all rounds.`,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
} else if (KILL) {
  const system = await startSystem({ reducers: 2, drivers: 2, model: modelOptions, env: { LOG_LEVEL: LOG_LEVEL, LLM_CONCURRENCY: "128", REDUCER_LEASE_TTL_MS: String(DEFAULT_LEASE_TTL_MS) } });
  try {
    const run = await runLoad(system, "load-kill", true);
    const k = run.kill!;
    const lines = [
      `Command: \`pnpm exec tsx bench/load/load.bench.ts --agents ${AGENTS} --turns ${TURNS} --concurrency ${CONCURRENCY} --kill-reducer\` — ${when()} UTC.`,
      machine("two reducers (default lease settings), two drivers"),
      "",
      "| measure | value |",
      "|---|---:|",
      `| turns/s (system, including the failover) | ${f1(turnsTotal / run.seconds)} |`,
      `| agent snapshots written during the load (before the kill) | ${run.snapshots} |`,
      `| partitions of the killed reducer | ${k.victimPartitions} of ${PARTITIONS} |`,
      `| turns in flight at the kill | ${k.inFlight} |`,
      `| serving again: an idle agent of a killed partition speaks at the kill → its request committed, ms | ${k.servingAgainMs} |`,
      `| turns never answered | ${k.unanswered} |`,
      `| turns whose request failed (no reply; first error) | ${run.failed.length}${run.failed[0] === undefined ? "" : ` (${run.failed[0]})`} |`,
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    await system.stop();
  }
} else {
  const system = await startSystem({ reducers: 1, drivers: 2, model: modelOptions, env: { LOG_LEVEL: LOG_LEVEL, LLM_CONCURRENCY: "128" } });
  try {
    // Baseline: the bare openai client against the same fake model, same concurrency.
    const client = new OpenAI({ baseURL: system.model.url, apiKey: "test" });
    const baselineLatency: number[] = [];
    const baselineCalls = Math.min(turnsTotal, 2000);
    const baselineStart = performance.now();
    await pool(Array.from({ length: baselineCalls }, (_, i) => i), CONCURRENCY, async (i) => {
      const t0 = performance.now();
      const stream = await client.chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: `baseline ${i}` }] });
      for await (const _chunk of stream) {
        // drain
      }
      baselineLatency.push(performance.now() - t0);
    });
    const baselineSeconds = (performance.now() - baselineStart) / 1000;
    const run = await runLoad(system, "load", false);
    const lines = [
      `Command: \`pnpm exec tsx bench/load/load.bench.ts --agents ${AGENTS} --turns ${TURNS} --concurrency ${CONCURRENCY}\` — ${when()} UTC.`,
      machine("one reducer, two drivers"),
      "",
      "| measure | value |",
      "|---|---:|",
      `| agents × turns | ${AGENTS} × ${TURNS} = ${turnsTotal} |`,
      `| turns/s (system) | ${f1(turnsTotal / run.seconds)} |`,
      `| model calls/s (baseline: bare \`openai\` client, same concurrency) | ${f1(baselineCalls / baselineSeconds)} |`,
      `| system turns/s ÷ baseline calls/s | ${(turnsTotal / run.seconds / (baselineCalls / baselineSeconds)).toFixed(2)}× |`,
      `| turn latency p50 / p99 (append → assistant item seen), ms | ${f1(percentile(run.turnLatency, 50))} / ${f1(percentile(run.turnLatency, 99))} |`,
      `| baseline call latency p50 / p99, ms | ${f1(percentile(baselineLatency, 50))} / ${f1(percentile(baselineLatency, 99))} |`,
      `| turn overhead p50 / p99 (model received − user committed), ms | ${f1(percentile(run.overhead, 50))} / ${f1(percentile(run.overhead, 99))} |`,
      `| agent snapshots written during the load | ${run.snapshots} |`,
      `| turns whose request failed (no reply; first error) | ${run.failed.length}${run.failed[0] === undefined ? "" : ` (${run.failed[0]})`} |`,
      `| reducer RSS growth per agent, KiB | ${f1((run.rss.reducer * 1024) / AGENTS)} |`,
      `| drivers' RSS growth per agent, KiB | ${f1((run.rss.drivers * 1024) / AGENTS)} |`,
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    await system.stop();
  }
}
