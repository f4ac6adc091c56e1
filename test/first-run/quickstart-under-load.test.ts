// Issue #13, "no flakes": ten fresh clones of this repository (cold UI build, install from the
// local package store) are started with the README's command, `./scripts/up.sh`, each pointed at
// its own nats-server and free ports, while two loops of the project's typecheck and busy loops
// hold the 2-core machine at a load average of about 8. Every start must reach ready, answer a
// turn on the offline model over the HTTP API (create an agent, send a message, read the reply),
// listen on loopback only, and stop cleanly on SIGTERM with nothing left listening; the last test
// checks that the starts really ran under that load.
//
// Starts run two at a time (each start is the other's competition for the CPU, in place of one of
// the busy loops), which halves the file's wall time; the load each start sees stays about 8.
//
// The clone takes committed files only. AGENTRT_FIRST_RUN_STARTS changes the number of starts
// (default 10), AGENTRT_FIRST_RUN_PARALLEL how many run at once (default 2) and
// AGENTRT_FIRST_RUN_BUSY_LOOPS the busy loops (default 4, one fewer per extra start at once).

import { parseStoredEvent, type AgentEvent } from "@agentrt/contract";
import { startNatsServer, waitFor, type NatsServer } from "@agentrt/testing";
import { createConnection } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FreshClone, freshClone, REPO_ROOT } from "./support/clone.ts";
import { listenersOfGroup } from "./support/listeners.ts";
import { type LoadGenerator, startLoad } from "./support/load.ts";
import { api, type RunningQuickstart, startQuickstart } from "./support/quickstart.ts";

const STARTS = Number(process.env.AGENTRT_FIRST_RUN_STARTS ?? 10);
const PARALLEL = Math.max(1, Number(process.env.AGENTRT_FIRST_RUN_PARALLEL ?? 2));
const BUSY_LOOPS = Number(process.env.AGENTRT_FIRST_RUN_BUSY_LOOPS ?? Math.max(0, 4 - 4 * (PARALLEL - 1)));
/** The issue's "load average of about 8"; the median start must have run at no less than this. */
const MIN_MEDIAN_LOAD1 = 6;
/** Per start: clone + install + UI build + start + one turn + stop, under load. */
const RUN_TIMEOUT_MS = 150_000;

interface RunRecord {
  readonly run: number;
  readonly setupAndReadyS: number;
  readonly stackReadyS: number;
  readonly turnS: number;
  readonly stopS: number;
  readonly load1: number;
}
const records: RunRecord[] = [];
let load: LoadGenerator;
const fileStartedAt = Date.now();

beforeAll(async () => {
  load = startLoad({ repoRoot: REPO_ROOT, typecheckLoops: 2, busyLoops: BUSY_LOOPS });
  // Let the load build up before the first start (the 1-minute average lags).
  await waitFor(() => load.load1() >= 4, { timeoutMs: 30_000, intervalMs: 500 }).catch(() => undefined);
});

afterAll(async () => {
  await load?.stop();
  const rows = records.map((r) => `| ${r.run} | ${r.setupAndReadyS.toFixed(1)} | ${r.stackReadyS.toFixed(1)} | ${r.turnS.toFixed(1)} | ${r.stopS.toFixed(1)} | ${r.load1.toFixed(1)} |`);
  process.stdout.write(
    [
      `first run under load: ${records.length}/${STARTS} starts ok in ${((Date.now() - fileStartedAt) / 1000).toFixed(0)} s`,
      "| run | up.sh → ready (s) | stack → ready (s) | turn (s) | stop (s) | load1 |",
      "|---:|---:|---:|---:|---:|---:|",
      ...rows,
      "",
    ].join("\n"),
  );
}, 60_000);

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

function parseEventsPage(raw: unknown): AgentEvent[] {
  if (typeof raw !== "object" || raw === null || !("events" in raw) || !Array.isArray(raw.events)) throw new Error(`not an events page: ${JSON.stringify(raw).slice(0, 300)}`);
  return raw.events.map((e: unknown) => {
    const parsed = parseStoredEvent(e);
    if (!parsed.ok) throw new Error(`bad event from the API: ${parsed.reason}`);
    return parsed.event;
  });
}

/** Create an agent, send a message, and wait until the offline model's reply is readable over the API. */
async function oneTurn(stack: RunningQuickstart, run: number): Promise<void> {
  const streamPath = `/agents/web/first-run-${run}`;
  const encoded = encodeURIComponent(streamPath);
  await api(stack.httpUrl, "POST", "/v1/agents", { streamPath });
  const content = `hello from start ${run}`;
  await api(stack.httpUrl, "POST", `/v1/streams/${encoded}/events`, {
    events: [{ type: "agents/context-added", payload: { role: "user", content, actor: { type: "user", origin: "web" } } }],
  });
  let events: AgentEvent[] = [];
  await waitFor(
    async () => {
      events = parseEventsPage(await api(stack.httpUrl, "GET", `/v1/streams/${encoded}/events?fromOffset=1&limit=500`));
      const asked = events.findIndex((e) => e.type === "agents/context-added" && e.payload.role === "user" && e.payload.content === content);
      return asked >= 0 && events.slice(asked).some((e) => e.type === "agents/context-added" && e.payload.role === "assistant" && e.payload.content.includes("[offline model]"));
    },
    { timeoutMs: 45_000, intervalMs: 250 },
  ).catch((error: unknown) => {
    throw new Error(`no offline-model reply for start ${run}: ${String(error)}; events: ${events.map((e) => e.type).join(", ")}\n${stack.output().slice(-3_000)}`);
  });
}

/** One start from a fresh clone: ready, one turn, a clean stop; its timings. */
async function oneStart(run: number): Promise<RunRecord> {
  let clone: FreshClone | undefined;
  let nats: NatsServer | undefined;
  let stack: RunningQuickstart | undefined;
  try {
    const t0 = Date.now();
    [clone, nats] = await Promise.all([freshClone(), startNatsServer()]);
    stack = await startQuickstart(clone.dir, nats.url);
    await stack.ready(RUN_TIMEOUT_MS - 40_000);
    const t1 = Date.now();
    const load1AtReady = load.load1();
    const stackReadyS = Number(/\[stack\]\S* ready in ([\d.]+) s/.exec(stack.output())?.[1]);
    // Dev mode binds loopback only: HTTP, gRPC and four ops ports at least, none elsewhere.
    const listeners = listenersOfGroup(stack.pgid);
    expect(listeners.length).toBeGreaterThanOrEqual(6);
    expect(listeners.filter((l) => !l.loopback)).toEqual([]);
    await oneTurn(stack, run);
    const t2 = Date.now();
    const code = await stack.stop(20_000);
    const t3 = Date.now();
    expect(code).toBe(0);
    expect(stack.output()).toMatch(/\[stack\]\S* stopped/);
    for (const port of [...stack.opsPorts, Number(new URL(stack.httpUrl).port)]) expect(await portOpen(port)).toBe(false);
    // No service restarted by the supervisor; on failure, the lines that say which and the output's end say why.
    const restarts = stack.output().split("\n").filter((line) => /exited unexpectedly/.test(line));
    expect(restarts, stack.output().slice(-4_000)).toEqual([]);
    const record = { run, setupAndReadyS: (t1 - t0) / 1000, stackReadyS, turnS: (t2 - t1) / 1000, stopS: (t3 - t2) / 1000, load1: load1AtReady };
    const slowStops = stack.output().match(/\S+ took [\d.]+ s to stop/g) ?? [];
    process.stderr.write(`first run ${run}/${STARTS}: ${JSON.stringify(record)}${slowStops.length > 0 ? ` (${slowStops.join(", ")})` : ""}\n`);
    return record;
  } finally {
    stack?.kill();
    await nats?.stop();
    await clone?.remove();
  }
}

describe(`the quickstart, ${STARTS} starts from fresh clones under load, ${PARALLEL} at a time`, () => {
  for (let first = 1; first <= STARTS; first += PARALLEL) {
    const runs = Array.from({ length: Math.min(PARALLEL, STARTS - first + 1) }, (_, i) => first + i);
    it(
      `start${runs.length > 1 ? "s" : ""} ${runs.join(" and ")}: reach${runs.length > 1 ? "" : "es"} ready, answer${runs.length > 1 ? "" : "s"} a turn on the offline model, stop${runs.length > 1 ? "" : "s"} cleanly`,
      async () => {
        expect(load.running()).toBe(2 + BUSY_LOOPS);
        const outcomes = await Promise.allSettled(runs.map((run) => oneStart(run)));
        for (const outcome of outcomes) if (outcome.status === "fulfilled") records.push(outcome.value);
        const failed = outcomes.flatMap((o, i) => (o.status === "rejected" ? [`start ${runs[i]}: ${String(o.reason)}`] : []));
        expect(failed).toEqual([]);
      },
      RUN_TIMEOUT_MS,
    );
  }

  it(`ran every start under a load average of about 8 (median 1-minute load at ready ≥ ${MIN_MEDIAN_LOAD1})`, () => {
    expect(records).toHaveLength(STARTS);
    const loads = records.map((r) => r.load1).sort((a, b) => a - b);
    expect(loads[Math.floor(loads.length / 2)]).toBeGreaterThanOrEqual(MIN_MEDIAN_LOAD1);
  });
});
