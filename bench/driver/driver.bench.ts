// LLM driver benchmark (issue #4).
//
// 1. Turn overhead: (time the fake model receives the request) − (time the triggering user
//    event's append was acknowledged) − debounce, over 200 sequential turns. The agent-reducer
//    and the llm-driver run as real processes (`node --import tsx …/main.ts`) on a
//    harness-started nats-server; this process appends the user events and hosts the fake
//    model, so both timestamps come from one clock.
// 2. Streaming passthrough: tokens/s a live subscriber (`subscribe(path, {ephemeral: true})`)
//    receives versus tokens/s the fake model emits, for paced rates and "as fast as it can",
//    in the same run.
//
// Run: pnpm exec tsx bench/driver/driver.bench.ts [--turns 200]
// BENCH_PROFILE_DIR=/tmp/prof: the reducer and the driver run with `--cpu-prof` into a directory
// each under it and are stopped with SIGTERM so they write their profiles.
// BENCH_SEQUENTIAL_ONLY=1: only the sequential turns (part 1), so a profile holds nothing else.
// BENCH_EVENT_KEYS=1: the services sign their records and read only signed ones (EVENT_KEYS_DIR,
// as the quickstart and the chart run them); this process signs as the gateway. Part 1b, where
// this process appends the reducer's request itself, is then left out.

import { type ChildProcess, spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { AgentEvent } from "@agentrt/contract";
import { ensureWorkStreams, loadEventSigning, publishWork, writeEventKeys } from "@agentrt/service-kit";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { type FakeModelRequest, monotonicMs, natsServerBinary, startFakeModel, startNatsServer, userMessage } from "@agentrt/testing";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const PARTITIONS = 8;
const argTurns = process.argv.indexOf("--turns");
const TURNS = argTurns === -1 ? 200 : Number(process.argv[argTurns + 1]);
const DEBOUNCE_MS = Number(process.env.BENCH_DEBOUNCE_MS ?? 0);
const WARMUP_TURNS = 10;
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
const AGENTS = 10;
const EVENT_KEYS_DIR = process.env.BENCH_EVENT_KEYS === "1" ? join(mkdtempSync(join(tmpdir(), "agentrt-bench-keys-")), "keys") : undefined;
if (EVENT_KEYS_DIR !== undefined) writeEventKeys(EVENT_KEYS_DIR);

const nowMs = monotonicMs;
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};
const fmt = (n: number, d = 2) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });

function machine(): string {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim() ?? "unknown CPU";
  const memKb = Number(/MemTotal:\s*(\d+)/.exec(readFileSync("/proc/meminfo", "utf8"))?.[1] ?? 0);
  const bin = natsServerBinary();
  const nats = bin === undefined ? "nats-server unknown" : execFileSync(bin, ["--version"], { encoding: "utf8" }).trim();
  return `nproc ${availableParallelism()}, ${cpu}, ${(memKb / 1048576).toFixed(1)} GiB RAM, Node ${process.version}, ${nats}`;
}

interface Service {
  readonly child: ChildProcess;
  readonly started: Promise<void>;
}

/** Starts a service as a real process; `started` resolves on its "<name> started" log line. */
function startService(name: string, main: string, env: Record<string, string>): Service {
  const profile = PROFILE_DIR === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${join(PROFILE_DIR, name)}`];
  const child = spawn(process.execPath, [...profile, "--import", "tsx", join(root, main)], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: "info", OPS_PORT: "0", PARTITION_COUNT: String(PARTITIONS), ...(EVENT_KEYS_DIR === undefined ? {} : { EVENT_KEYS_DIR }), ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const started = new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${name} exited with ${code} before it started`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (process.env.BENCH_VERBOSE) process.stderr.write(`[${name}] ${line}\n`);
      if (line.includes(`"msg":"${name} started"`)) resolve();
    });
  });
  return { child, started };
}

/** CPU time (user + system) a process has used so far, ms; undefined when /proc does not say. */
function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
/** Messages nats-server has received and sent so far (its monitoring endpoint). */
async function serverMessages(): Promise<{ in: number; out: number }> {
  const varz = (await (await fetch(`http://127.0.0.1:${nats.monitorPort}/varz`)).json()) as { in_msgs?: number; out_msgs?: number };
  return { in: varz.in_msgs ?? 0, out: varz.out_msgs ?? 0 };
}
/** Messages nats-server has received from each named connection so far. */
async function messagesByConnection(): Promise<Map<string, number>> {
  const connz = (await (await fetch(`http://127.0.0.1:${nats.monitorPort}/connz?limit=1000`)).json()) as { connections?: { name?: string; cid: number; in_msgs: number }[] };
  const counts = new Map<string, number>();
  for (const c of connz.connections ?? []) counts.set(c.name ?? `cid ${c.cid}`, (counts.get(c.name ?? `cid ${c.cid}`) ?? 0) + c.in_msgs);
  return counts;
}
const CLOCK_TICKS = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

/** The stream's events from `fromOffset` through the first settlement (a live subscription, no polling). */
async function untilSettled(path: string, fromOffset: number): Promise<AgentEvent[]> {
  const seen: AgentEvent[] = [];
  const live = store.subscribe(path, { fromOffset });
  try {
    for await (const event of live) {
      seen.push(event);
      if (event.type === "agent/llm-request-settled") return seen;
    }
  } finally {
    await live.close();
  }
  throw new Error(`${path} ended without a settlement`);
}

const nats = await startNatsServer();
const nc = await connect({ servers: nats.url });
await ensureWorkStreams(await jetstreamManager(nc));
const js = jetstream(nc);
const store = await JetStreamEventStore.open(nc, {
  partitionCount: PARTITIONS,
  ...(EVENT_KEYS_DIR === undefined ? {} : { signing: loadEventSigning(EVENT_KEYS_DIR, "web-gateway") }),
});

// Replies are short prose (no script), so a turn ends at the settlement.
const model = await startFakeModel({ defaultReply: { text: "ok.", usage: { inputTokens: 100, outputTokens: 1 } } });
const providers = JSON.stringify({ openai: { baseUrl: model.url, apiKey: "bench", api: "chat", promptCacheKey: true } });
const services = [
  startService("agent-reducer", "services/agent-reducer/src/main.ts", { NATS_URL: nats.url, REDUCER_ID: "bench-reducer" }),
  startService("llm-driver", "services/llm-driver/src/main.ts", { NATS_URL: nats.url, LLM_PROVIDERS: providers }),
];
const cleanup = async () => {
  for (const service of services) {
    if (PROFILE_DIR === undefined || service.child.exitCode !== null) service.child.kill("SIGKILL");
    else {
      const exited = new Promise((resolve) => service.child.once("exit", resolve));
      service.child.kill("SIGTERM");
      await exited;
    }
  }
  await model.close().catch(() => undefined);
  await store.close().catch(() => undefined);
  await nc.close().catch(() => undefined);
  await nats.stop();
};

try {
  await Promise.all(services.map((s) => s.started));
  // --- 1. turn overhead --------------------------------------------------------------------
  const agents = Array.from({ length: AGENTS }, (_, i) => `/agents/bench/driver-${i}`);
  for (const path of agents) {
    await store.append(path, [
      { type: "agent/created", payload: {} },
      { type: "agent/configured", payload: { config: { interpretResponses: true, llmRequestDebounceMs: DEBOUNCE_MS } } },
      { type: "agents/context-added", payload: { role: "system", key: "identity", content: "You are a benchmark agent." } },
    ]);
  }
  const samples: number[] = [];
  const ackToRequested: number[] = [];
  const requestedToModel: number[] = [];
  const ackToSettledSeen: number[] = [];
  const processes = { reducer: services[0]?.child.pid, driver: services[1]?.child.pid, "nats-server": nats.pid };
  let cpuBefore: Record<string, number | undefined> = {};
  let messagesBefore = { in: 0, out: 0 };
  let connectionsBefore = new Map<string, number>();
  // BENCH_SUBJECTS=1: tally every message of the measured turns by subject (a wildcard
  // subscription, so the server's own counts above double while it runs).
  const bySubject = new Map<string, number>();
  let tally = false;
  if (process.env.BENCH_SUBJECTS) {
    nc.subscribe(">", {
      callback: (_err, msg) => {
        if (!tally) return;
        const name = msg.subject.startsWith("_INBOX.")
          ? "_INBOX (replies, deliveries)"
          : msg.subject.startsWith("$JS.API.DIRECT.GET.")
            ? `$JS.API.DIRECT.GET ${msg.subject.split(".").length > 5 ? "(last by subject)" : "(by request)"}`
            : msg.subject.split(".").slice(0, msg.subject.startsWith("$") ? 4 : 1).join(".");
        bySubject.set(name, (bySubject.get(name) ?? 0) + 1);
      },
    });
  }
  for (let turn = 0; turn < TURNS + WARMUP_TURNS; turn += 1) {
    if (turn === WARMUP_TURNS) {
      cpuBefore = Object.fromEntries(Object.entries(processes).map(([name, pid]) => [name, cpuMs(pid)]));
      messagesBefore = await serverMessages();
      tally = true;
      connectionsBefore = await messagesByConnection();
    }
    const path = agents[turn % AGENTS] as string;
    const marker = `turn-${turn}`;
    const seen = model.requests.length;
    const result = await store.append(path, [userMessage(marker)]);
    const ackAt = nowMs();
    const userOffset = (result.events[0] as AgentEvent).offset;
    const request = (await model.waitForRequests(seen + 1, 30_000)).at(-1) as FakeModelRequest;
    if (!request.rawBody.includes(`"${marker}"`)) throw new Error(`the model's request ${seen} is not ${marker}'s`);
    // The turn is over when its settlement is on the stream; only then start the next one.
    const events = await untilSettled(path, userOffset);
    const settledSeenAt = nowMs();
    const requested = events.find((e) => e.type === "agent/llm-request-requested");
    if (turn >= WARMUP_TURNS) {
      samples.push(request.receivedAtMonotonicMs - ackAt - DEBOUNCE_MS);
      ackToSettledSeen.push(settledSeenAt - ackAt - DEBOUNCE_MS);
      if (requested) {
        ackToRequested.push(Date.parse(requested.createdAt) - Date.parse((result.events[0] as AgentEvent).createdAt));
        requestedToModel.push(request.receivedAtMs - Date.parse(requested.createdAt));
      }
    }
  }

  // CPU per sequential turn (the warm-up excluded), from /proc: what each process spent on it.
  const cpuPerTurn = Object.entries(processes).map(([name, pid]) => {
    const before = cpuBefore[name];
    const after = cpuMs(pid);
    return { name, ms: before === undefined || after === undefined ? undefined : (after - before) / TURNS };
  });

  // Messages through nats-server per sequential turn (this client's appends and subscriptions
  // included): a count of the round trips and deliveries a turn costs, whatever the load.
  const messagesAfter = await serverMessages();
  tally = false;
  const connectionsAfter = await messagesByConnection();
  for (const [name, count] of connectionsAfter) process.stdout.write(`connection ${name}: ${fmt((count - (connectionsBefore.get(name) ?? 0)) / TURNS, 2)} messages in per turn\n`);
  for (const [subject, count] of [...bySubject].sort((a, b) => b[1] - a[1])) process.stdout.write(`subject ${subject}: ${fmt(count / TURNS, 2)} per turn\n`);
  const messagesPerTurn = { in: (messagesAfter.in - messagesBefore.in) / TURNS, out: (messagesAfter.out - messagesBefore.out) / TURNS };

  const sequentialOnly = process.env.BENCH_SEQUENTIAL_ONLY !== undefined;
  // --- 1b. driver only -------------------------------------------------------------------------
  // This process plays the reducer: it appends the request itself and hands it over, so the
  // overhead is the driver's alone (request append acknowledged → model receives). The
  // streams are never born (no agent/created), so the real reducer leaves them alone.
  const driverOnly: number[] = [];
  const soloAgents = Array.from({ length: AGENTS }, (_, i) => `/agents/bench/solo-${i}`);
  for (const path of soloAgents) {
    await store.append(path, [
      { type: "agent/configured", payload: { config: { interpretResponses: true, llmRequestDebounceMs: 0 } } },
      { type: "agents/context-added", payload: { role: "system", key: "identity", content: "You are a benchmark agent." } },
    ]);
  }
  for (let turn = 0; turn < (sequentialOnly || EVENT_KEYS_DIR !== undefined ? 0 : TURNS + WARMUP_TURNS); turn += 1) {
    const path = soloAgents[turn % AGENTS] as string;
    const marker = `solo-${turn}`;
    const seen = model.requests.length;
    await store.append(path, [userMessage(marker)]);
    const expiresAt = new Date(Date.now() + 600_000).toISOString();
    const appended = await store.append(path, [{ type: "agent/llm-request-requested", payload: { model: "openai/gpt-5.6-terra", expiresAt } }]);
    const ackAt = nowMs();
    const R = (appended.events[0] as AgentEvent).offset;
    await publishWork(js, "llm", store.partitionOf(path), { streamPath: path, requestOffset: R });
    const request = (await model.waitForRequests(seen + 1, 30_000)).at(-1) as FakeModelRequest;
    if (!request.rawBody.includes(`"${marker}"`)) throw new Error(`the model's request ${seen} is not ${marker}'s`);
    await untilSettled(path, R);
    if (turn >= WARMUP_TURNS) driverOnly.push(request.receivedAtMonotonicMs - ackAt);
  }

  // --- 2. streaming passthrough ------------------------------------------------------------
  const rates: { label: string; tokens: number; tokensPerSecond: number }[] = [
    { label: "1,000 tok/s", tokens: 2_000, tokensPerSecond: 1_000 },
    { label: "5,000 tok/s", tokens: 10_000, tokensPerSecond: 5_000 },
    { label: "as fast as it can", tokens: 20_000, tokensPerSecond: Infinity },
  ];
  const passthrough: { label: string; emitted: number; received: number; events: number }[] = [];
  for (const [i, rate] of (sequentialOnly ? [] : rates).entries()) {
    const path = `/agents/bench/stream-${i}`;
    await store.append(path, [
      { type: "agent/created", payload: {} },
      { type: "agent/configured", payload: { config: { interpretResponses: true, llmRequestDebounceMs: 0 } } },
    ]);
    model.script({ tokens: Array.from({ length: rate.tokens }, (_, t) => `t${t} `), tokensPerSecond: rate.tokensPerSecond });
    const live = store.subscribe(path, { fromOffset: 1, ephemeral: true });
    let first = 0;
    let last = 0;
    let received = 0;
    let events = 0;
    const done = (async () => {
      for await (const event of live) {
        if (event.type === "agent/llm-response-chunks") {
          const at = nowMs();
          if (first === 0) first = at;
          last = at;
          events += 1;
          for (const chunk of event.payload.chunks as { choices?: { delta?: { content?: string } }[] }[]) if (chunk.choices?.[0]?.delta?.content) received += 1;
        }
        if (event.type === "agent/llm-request-settled") break;
      }
    })();
    const seen = model.requests.length;
    await store.append(path, [userMessage(`stream ${rate.label}`)]);
    await done;
    await live.close();
    const emittedBy = model.requests[seen] as FakeModelRequest;
    const p = emittedBy.progress;
    if (received !== rate.tokens || p.tokensSent !== rate.tokens) throw new Error(`${rate.label}: received ${received} / sent ${p.tokensSent} of ${rate.tokens} tokens`);
    // Emitted: tokens over the model's first-to-last-token span. Received: the same tokens over
    // the span from the model's first token to the subscriber holding the last one, so every
    // delay the driver and the live lane add counts against it.
    passthrough.push({
      label: rate.label,
      emitted: rate.tokens / (((p.lastTokenAtMs ?? 0) - (p.firstTokenAtMs ?? 0)) / 1000),
      received: rate.tokens / ((last - (p.firstTokenAtMs ?? 0)) / 1000),
      events,
    });
    void first;
  }

  const load = loadavg().map((l) => l.toFixed(1)).join(", ");
  const lines = [
    `Command: \`pnpm exec tsx bench/driver/driver.bench.ts --turns ${TURNS}\` — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.`,
    `Machine: ${machine()}. Load average at the end: ${load} (1/5/15 min); other work was running on the machine.`,
    "",
    `Event keys: ${EVENT_KEYS_DIR === undefined ? "off (nothing signed or checked)" : "on (each service signs its records and reads only signed ones; BENCH_EVENT_KEYS=1)"}.`,
    `Turn overhead: ${TURNS} sequential turns (after ${WARMUP_TURNS} warm-up turns) over ${AGENTS} agents; agent-reducer and llm-driver as real processes; debounce ${DEBOUNCE_MS} ms (subtracted).`,
    "Overhead = fake model receives the request − the user event's append is acknowledged − debounce.",
    "",
    "| measure | p50 ms | p99 ms | max ms | goal |",
    "|---|---:|---:|---:|---|",
    `| turn overhead (ack → model receives) | ${fmt(pct(samples, 50))} | ${fmt(pct(samples, 99))} | ${fmt(Math.max(...samples))} | p50 ≤ 5, p99 ≤ 20 |`,
    `| reducer: user event → request event (createdAt, ms resolution) | ${fmt(pct(ackToRequested, 50))} | ${fmt(pct(ackToRequested, 99))} | ${fmt(Math.max(...ackToRequested))} | |`,
    `| driver: request event createdAt → model receives | ${fmt(pct(requestedToModel, 50))} | ${fmt(pct(requestedToModel, 99))} | ${fmt(Math.max(...requestedToModel))} | |`,
    `| turn (ack → this client sees the settlement: reply stored and delivered) | ${fmt(pct(ackToSettledSeen, 50))} | ${fmt(pct(ackToSettledSeen, 99))} | ${fmt(Math.max(...ackToSettledSeen))} | |`,
    ...(driverOnly.length === 0
      ? []
      : [`| driver only (${TURNS} turns, this process appends the request and its work item): request append acknowledged → model receives | ${fmt(pct(driverOnly, 50))} | ${fmt(pct(driverOnly, 99))} | ${fmt(Math.max(...driverOnly))} | |`]),
    "",
    `CPU per sequential turn (/proc utime + stime, ${TURNS} turns): ${cpuPerTurn.map((c) => `${c.name} ${c.ms === undefined ? "n/a" : `${fmt(c.ms)} ms`}`).join(", ")}.`,
    `NATS messages per sequential turn (nats-server /varz, this client's included): ${fmt(messagesPerTurn.in, 1)} in, ${fmt(messagesPerTurn.out, 1)} out.`,
    "",
    "Streaming passthrough: one turn per rate. Emitted = tokens / (model's last token − its first token); received = tokens / (subscriber has the last chunk event − model's first token).",
    "",
    "| model rate | emitted tok/s | received tok/s | received/emitted | chunk events | goal |",
    "|---|---:|---:|---:|---:|---|",
    ...passthrough.map(
      (r) => `| ${r.label} | ${fmt(r.emitted, 0)} | ${fmt(r.received, 0)} | ${fmt(r.received / r.emitted)}× | ${r.events} | ${r.label === "as fast as it can" ? "report" : "≥ 0.95×"} |`,
    ),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  await cleanup();
  if (EVENT_KEYS_DIR !== undefined) rmSync(dirname(EVENT_KEYS_DIR), { recursive: true, force: true });
}
