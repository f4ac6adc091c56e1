// The chaos soak: a 3-node R3 NATS cluster, two replicas of every service, fifty agents talking
// continuously, one live subscriber per agent on one of two gateways, and a seeded schedule of
// every fault at once. At the end every agent must answer and quiesce, the stream audit must
// find nothing on any stream, and every subscriber must hold exactly its stream's offsets.
// Used by the short test (test/soak/soak.test.ts) and the long form (`pnpm soak`).

import { mkdirSync, writeFileSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
import { join } from "node:path";
import { type AuditReport, auditAgentStream, foldAgentEvents, initialAgentState } from "@agentrt/agent-core";
import type { AgentEvent } from "@agentrt/contract";
import { type LiveFollower, type NatsCluster, checkSequence, resumingFollower, startNatsCluster, waitFor } from "@agentrt/testing";
import { WORK_STREAMS } from "@agentrt/service-kit";
import { briefLogLine, type System, startSystem } from "../support/system.ts";
import { SoakAgent, type TurnKind, type TurnRecord } from "./agents.ts";
import { slowTurnAnatomy, type WaitLine } from "./anatomy.ts";
import { FaultInjector, type InjectedFault } from "./faults.ts";
import { StreamMirror } from "./mirror.ts";
import { soakReply } from "./model.ts";
import { FAULT_KINDS, type FaultKind, faultSchedule } from "./schedule.ts";

export interface SoakOptions {
  readonly seed: number;
  readonly durationMs: number;
  readonly agents?: number;
  /** Mean gap between faults. */
  readonly meanFaultIntervalMs?: number;
  /** How long one turn may take before it counts as stuck. */
  readonly turnTimeoutMs?: number;
  /** Progress lines (the long form prints them; the test keeps quiet). */
  readonly log?: (line: string) => void;
}

export interface RecoveryFigures {
  readonly injected: number;
  readonly skipped: number;
  /** Samples: (fault, agent with a turn in flight at the fault) pairs. */
  readonly samples: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface SoakReport {
  readonly seed: number;
  readonly seconds: number;
  readonly agents: number;
  readonly turns: Record<TurnKind, number>;
  readonly stuckTurns: number;
  /** Each stuck turn: its stream's last events and what the services said of that stream, in short. */
  readonly stuck: readonly string[];
  readonly faults: number;
  readonly recovery: Record<FaultKind, RecoveryFigures>;
  readonly faultErrors: readonly string[];
  /** Faults that ran long without failing (a node that took over 30 s to catch up). */
  readonly faultNotes: readonly string[];
  /** Restarted services that failed at start-up and were started again, as a supervisor would. */
  readonly startupCrashes: number;
  /** Services not running at the end. */
  readonly processesDown: readonly string[];
  /** Time from the last fault's recovery until every agent had answered one more message. */
  readonly allAnsweredAfterLastFaultMs: number;
  readonly notQuiesced: readonly string[];
  readonly events: number;
  readonly requests: number;
  readonly scripts: number;
  readonly violations: number;
  readonly violationsByRule: Record<string, number>;
  readonly subscribers: number;
  readonly subscriberReconnects: number;
  readonly subscriberGaps: number;
  readonly subscriberDuplicates: number;
  readonly mirrorResumes: number;
  readonly mirrorMisses: number;
  readonly modelRequests: number;
  /** Work items delivered to the other kind's consumer (0 by design: a stream per kind). */
  readonly foreignWorkItems: number;
  /** Turns that took longer than SLOW_TURN_MS (stuck ones included). */
  readonly slowTurns: number;
  /** Where the slow turns' time went: their waits of 1 s or more, by step, longest total first. */
  readonly slowTurnWaits: readonly WaitLine[];
}

/** A turn slower than this counts as slow: the long form's goal is answers within 30 s of a fault. */
export const SLOW_TURN_MS = 30_000;

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => undefined);
  const agentsCount = options.agents ?? 50;
  const turnTimeoutMs = options.turnTimeoutMs ?? 90_000;
  const started = Date.now();
  let cluster: NatsCluster | undefined;
  /** The faults injected so far (the injector's own list, once it exists), for the log dumps. */
  let injected: readonly InjectedFault[] = [];
  let system: System | undefined;
  let mirror: StreamMirror | undefined;
  const clients: LiveFollower[] = [];
  const crashes: string[] = [];
  try {
    cluster = await startNatsCluster({ nodes: 3 });
    await cluster.waitForMetaLeader();
    system = await startSystem({
      natsServers: cluster.servers,
      replicas: 3,
      reducers: 2,
      drivers: 2,
      hosts: 2,
      gateways: 2,
      // From their bundles, as the quickstart and the image run them: a restarted service is
      // serving again in what production's restart takes, not after tsx compiled it afresh.
      fromBundles: true,
      // SOAK_LOG_DIR: the whole of every service's output is written there, not only its tail.
      keepAllOutput: process.env.SOAK_LOG_DIR !== undefined,
      repoProvider: { openPulls: 3 },
      onStartupCrash: (what) => crashes.push(what),
      model: { defaultReply: soakReply },
      env: {
        LLM_WORK_ACK_WAIT_MS: "2000",
        LLM_WORK_HEARTBEAT_MS: "300",
        LLM_IDLE_TIMEOUT_MS: "4000",
        SCRIPT_WORK_ACK_WAIT_MS: "2000",
        MAX_LIVE_SUBSCRIPTIONS_PER_KEY: String(agentsCount * 2),
        // SOAK_LOG_LEVEL=info for diagnosis (with SOAK_LOG_DIR); warnings by default.
        ...(process.env.SOAK_LOG_LEVEL === undefined ? {} : { LOG_LEVEL: process.env.SOAK_LOG_LEVEL }),
      },
    });
    log(`soak: system up in ${Math.round((Date.now() - started) / 1000)} s`);
    const sys = system;
    const feedMirror = new StreamMirror(sys.store);
    mirror = feedMirror;
    const stuck: string[] = [];
    const agents = Array.from(
      { length: agentsCount },
      (_, i) =>
        new SoakAgent(i, {
          store: sys.store,
          mirror: feedMirror,
          seed: options.seed,
          turnTimeoutMs,
          onStuck: (path, id, events) => {
            const line = `${path} waiting for ${id} at ${Math.round((Date.now() - started) / 1000)} s: ${JSON.stringify(events.slice(-16).map((e) => [e.offset, e.type, e.idempotencyKey ?? "", e.type === "agent/llm-request-settled" ? e.payload.result.status : ""]))}`;
            log(`STUCK ${line}`);
            // What the services said about this stream (warnings and errors), for the next fix.
            const said = sys.processes.all.flatMap((p) => p.logs().split("\n").filter((l) => l.includes(`"${path}"`) && /"level":(40|50|60)/.test(l)).slice(-3).map((l) => ({ name: p.name, line: l })));
            for (const { name, line: l } of said) log(`  ${name}: ${l.slice(0, 400)}`);
            // Kept short for the report, whose failure message is what a CI log kept in part shows.
            stuck.push(`${line.slice(0, 1_500)}${said.map(({ name, line: l }) => `\n  ${name}: ${briefLogLine(l)}`).join("")}`);
            dumpLogs(sys, `stuck-${Math.round((Date.now() - started) / 1000)}s`, cluster, injected);
          },
        }),
    );
    await Promise.all(agents.map((a) => a.create()));
    // One live subscriber per agent, half SSE and half WebSocket, spread over both gateways.
    agents.forEach((a, i) => {
      const url = sys.gatewayUrls[i % sys.gatewayUrls.length]!;
      clients.push(resumingFollower(url, i % 4 < 2 ? "sse" : "ws", a.path));
    });

    const injector = new FaultInjector(sys, cluster, crashes);
    injected = injector.injected;
    const schedule = faultSchedule({ seed: options.seed, durationMs: options.durationMs, meanIntervalMs: options.meanFaultIntervalMs ?? 1_500 });
    const soakStart = Date.now();
    let talking = true;
    const talk = agents.map((a) => a.talk(() => talking));
    const progress = setInterval(() => {
      const turns = agents.reduce((n, a) => n + a.turns.filter((t) => t.completedAt !== undefined).length, 0);
      log(`soak: ${Math.round((Date.now() - soakStart) / 1000)} s, ${injector.injected.length} faults, ${turns} turns, ${stuck.length} stuck`);
      // A step no bound should let last this long is a hang: say where (a long run once hung here).
      for (const a of agents) if (a.step !== "idle" && Date.now() - a.stepSince > turnTimeoutMs + 60_000) log(`soak: ${a.path} has been ${a.step} for ${Math.round((Date.now() - a.stepSince) / 1000)} s`);
    }, 30_000);
    for (const fault of schedule) {
      const wait = soakStart + fault.atMs - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      injector.inject(fault);
    }
    // Deferred faults still land for a few seconds after the schedule's end, then no more.
    await new Promise((r) => setTimeout(r, 3_000));
    injector.stop();
    await injector.settle();
    const lastFaultAt = Math.max(...injector.injected.map((f) => f.recoveredAt ?? f.at));
    talking = false;
    await Promise.all(talk);

    // Every agent answers one more message once the faults are over.
    const finals = await Promise.all(agents.map((a) => a.turn("plain")));
    clearInterval(progress);
    const allAnsweredAt = Math.max(...finals.map((t) => t.completedAt ?? Number.POSITIVE_INFINITY));

    // Every agent quiesces: no turn pending, no request open, no script running.
    const quiet = async (a: SoakAgent) => {
      const state = foldAgentEvents(initialAgentState(a.path), await a.readSurely());
      return state.openRequest === null && state.pendingLlmRequestTrigger === null && state.activeScriptExecutions.length === 0;
    };
    const notQuiesced: string[] = [];
    await waitFor(async () => {
      notQuiesced.length = 0;
      for (const a of agents) if (!(await quiet(a))) notQuiesced.push(a.path);
      return notQuiesced.length === 0;
    }, { timeoutMs: 60_000, intervalMs: 1_000 }).catch(() => undefined);

    // The audit users run, over every stream.
    const streams = new Map<string, AgentEvent[]>();
    for (const a of agents) streams.set(a.path, await a.readSurely());
    const reports: AuditReport[] = [...streams.values()].map((events) => auditAgentStream(events, { nowMs: Date.now() }));
    const violationsByRule: Record<string, number> = {};
    for (const report of reports) {
      for (const v of report.violations) {
        violationsByRule[v.rule] = (violationsByRule[v.rule] ?? 0) + 1;
        log(`AUDIT ${report.streamPath}: ${v.rule} at ${JSON.stringify(v.offsets)}: ${v.message}`);
      }
    }

    // Every live subscriber holds exactly its stream: offsets 1..last, once each, in order.
    const lasts = agents.map((a) => streams.get(a.path)!.length);
    await waitFor(() => clients.every((c, i) => (c.received.at(-1) ?? 0) >= lasts[i]!), { timeoutMs: 60_000, intervalMs: 250 }).catch(() => undefined);
    // Exactly the stream: every offset once and in order, and nothing beyond its last offset.
    const checks = clients.map((c, i) => {
      const r = checkSequence(c.received, lasts[i]!);
      const beyond = c.received.filter((o) => o > lasts[i]!).length;
      return { gaps: r.gaps, duplicates: r.duplicates + beyond };
    });
    checks.forEach((r, i) => {
      if (r.gaps > 0 || r.duplicates > 0) log(`SUBSCRIBER ${agents[i]!.path} (${i % 4 < 2 ? "sse" : "ws"}): ${r.gaps} gaps, ${r.duplicates} duplicates, resumes ${JSON.stringify(clients[i]!.resumes)}`);
    });
    const lagged = sys.processes.logs().split("\n").filter((l) => l.includes("read ended before the request")).length;
    // Items of one kind delivered to the other kind's consumer (put back, see classifyWorkMessage):
    // impossible since each kind has its own stream; counted so a regression shows.
    const foreign = sys.processes.logs().split("\n").filter((l) => l.includes("a work item of another kind was delivered")).length;
    if (foreign > 0) {
      const jsm = await jetstreamManager(sys.nc);
      const consumers: string[] = [];
      for (const stream of Object.values(WORK_STREAMS)) for await (const c of jsm.consumers.list(stream)) consumers.push(`${stream}/${c.name}: ${c.config.filter_subject ?? "(no filter)"}`);
      log(`soak: ${foreign} work items of another kind reached a consumer; the work consumers: ${consumers.join(", ")}`);
    }
    if (lagged > 0) log(`soak: ${lagged} work items were read before their request was visible and tried again`);
    for (const line of injector.errors) log(`FAULT ERROR ${line}`);
    for (const line of injector.notes) log(`FAULT NOTE ${line}`);
    for (const line of injector.crashes) log(`CRASHED AT START-UP (started again) ${line}`);
    // Every process is serving at the end: none died on its own and stayed dead.
    const down = sys.processes.all.filter((p) => !p.running).map((p) => p.name);
    // Why a process that died on its own died: the end of what it said.
    for (const p of sys.processes.all.filter((q) => !q.running)) log(`DOWN ${p.name} (${p.exitCount} exits): ${p.logs().slice(-1500)}`);

    const allTurns = agents.flatMap((a) => a.turns);
    const endOf = (t: TurnRecord) => t.completedAt ?? t.startedAt + turnTimeoutMs;
    const slow = allTurns.filter((t) => endOf(t) - t.startedAt > SLOW_TURN_MS);
    const slowTurnWaits = slowTurnAnatomy(slow.map((t) => ({ events: streams.get(agents[t.agent]!.path)!, turn: t, endAt: endOf(t) })));
    const turns = { plain: 0, script: 0, interrupted: 0, "double-texted": 0 } as Record<TurnKind, number>;
    for (const t of allTurns) turns[t.kind] += 1;
    return {
      seed: options.seed,
      seconds: Math.round((Date.now() - started) / 1000),
      agents: agentsCount,
      turns,
      stuckTurns: allTurns.filter((t) => t.stuck).length,
      stuck: stuck.slice(0, 5),
      faults: injector.injected.length,
      recovery: recoveryTable(injector.injected, injector.skipped, allTurns),
      faultErrors: injector.errors,
      faultNotes: injector.notes,
      startupCrashes: injector.crashes.length,
      processesDown: down,
      allAnsweredAfterLastFaultMs: allAnsweredAt - lastFaultAt,
      notQuiesced,
      events: lasts.reduce((n, l) => n + l, 0),
      requests: reports.reduce((n, r) => n + r.requests, 0),
      scripts: reports.reduce((n, r) => n + r.scripts, 0),
      violations: reports.reduce((n, r) => n + r.violations.length, 0),
      violationsByRule,
      subscribers: clients.length,
      subscriberReconnects: clients.reduce((n, c) => n + c.reconnects, 0),
      subscriberGaps: checks.reduce((n, r) => n + r.gaps, 0),
      subscriberDuplicates: checks.reduce((n, r) => n + r.duplicates, 0),
      mirrorResumes: feedMirror.resumes,
      mirrorMisses: agents.reduce((n, a) => n + a.mirrorMisses, 0),
      modelRequests: sys.model.requests.length,
      foreignWorkItems: foreign,
      slowTurns: slow.length,
      slowTurnWaits: slowTurnWaits.slice(0, 12),
    };
  } catch (error) {
    if (system) log(system.processes.logs().split("\n").filter((l) => /"level":(50|60)/.test(l)).slice(-40).join("\n"));
    throw error;
  } finally {
    if (system !== undefined) dumpLogs(system, "end", cluster, injected);
    for (const c of clients) c.close();
    await mirror?.close();
    await system?.stop();
    await cluster?.stop();
  }
}

const STUCK_DUMP_CHARS = 4_000_000;

/**
 * SOAK_LOG_DIR=<dir> keeps every service's output (the tail each process holds) for diagnosis:
 * at the end, and when a turn is found stuck (before later output pushes it out).
 */
function dumpLogs(system: System, when: string, cluster?: NatsCluster, faults?: readonly InjectedFault[]): void {
  const logDir = process.env.SOAK_LOG_DIR;
  if (logDir === undefined) return;
  const dir = join(logDir, when);
  mkdirSync(dir, { recursive: true });
  // A stuck turn's dump keeps each process's recent output; the end's keeps all of it.
  for (const p of system.processes.all) writeFileSync(join(dir, `${p.name}.log`), when === "end" ? p.logs() : p.logs().slice(-STUCK_DUMP_CHARS));
  // The NATS nodes' own output (elections, lost quorum, catch-up) and the faults so far, so a
  // stall can be laid against what the cluster was doing and what had just been injected.
  for (const node of cluster?.nodes ?? []) writeFileSync(join(dir, `nats-${node.serverName}.log`), node.logs());
  if (faults !== undefined) writeFileSync(join(dir, "faults.json"), JSON.stringify(faults.map((f) => ({ ...f, atIso: new Date(f.at).toISOString() })), null, 1));
}

/**
 * Recovery after each kind of fault: for every agent with a turn in flight when the fault was
 * injected, the time until that turn completed (p50/p99/max over those samples).
 */
export function recoveryTable(
  faults: readonly InjectedFault[],
  skipped: Partial<Record<FaultKind, number>>,
  turns: readonly TurnRecord[],
): Record<FaultKind, RecoveryFigures> {
  const table = {} as Record<FaultKind, RecoveryFigures>;
  for (const kind of FAULT_KINDS) {
    const samples: number[] = [];
    const ofKind = faults.filter((f) => f.kind === kind);
    for (const fault of ofKind) {
      for (const t of turns) {
        if (t.startedAt <= fault.at && t.completedAt !== undefined && t.completedAt > fault.at) samples.push(t.completedAt - fault.at);
      }
    }
    samples.sort((a, b) => a - b);
    const pick = (q: number) => (samples.length === 0 ? 0 : samples[Math.min(samples.length - 1, Math.ceil(q * samples.length) - 1)]!);
    table[kind] = { injected: ofKind.length, skipped: skipped[kind] ?? 0, samples: samples.length, p50Ms: pick(0.5), p99Ms: pick(0.99), maxMs: samples.at(-1) ?? 0 };
  }
  return table;
}

/** The report as the lines `pnpm soak` prints and docs/operations.md records. */
export function formatSoakReport(report: SoakReport): string {
  const rows = FAULT_KINDS.map((k) => {
    const r = report.recovery[k];
    return `| ${k} | ${r.injected} | ${r.skipped} | ${r.samples} | ${(r.p50Ms / 1000).toFixed(1)} | ${(r.p99Ms / 1000).toFixed(1)} | ${(r.maxMs / 1000).toFixed(1)} |`;
  });
  const { recovery: _recovery, slowTurnWaits, ...totals } = report;
  const waits = slowTurnWaits.map((w) => `| ${w.step} | ${w.count} | ${(w.totalMs / 1000).toFixed(1)} | ${(w.maxMs / 1000).toFixed(1)} |`);
  return [
    "| fault | injected | skipped | samples | recovery p50 s | p99 s | max s |",
    "|---|---|---|---|---|---|---|",
    ...rows,
    "",
    `Where the ${report.slowTurns} turns slower than ${SLOW_TURN_MS / 1000} s waited (waits of 1 s or more between their stored events):`,
    "",
    "| step | waits | total s | max s |",
    "|---|---|---|---|",
    ...waits,
    "",
    JSON.stringify(totals),
  ].join("\n");
}
