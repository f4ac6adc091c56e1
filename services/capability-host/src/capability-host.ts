// The capability host, wired: the checker (worker threads, warming in the background), the
// sandbox, the itx host functions, the provider registry, the liveness lease, and the durable
// `capability-host` consumer of `work.script.*` with per-agent fair sharing. Built from
// injected clients (NATS connection, event store, logger) so main.ts and the tests wire the
// same thing.

import { birthBatch } from "@agentrt/agent-core";
import { agentCoreWrap } from "./codemode.ts";
import { DEFAULT_TENANT_QUOTA, type EventStore, quotaStore, StreamQuota, tenantOf } from "@agentrt/streams";
import { AgentFairShare, consumeWork, ensureWorkStream, notVisibleOutcome, startWorkClaims, StreamCache, untilCreated, untilNatsAnswers, type WorkClaims, type WorkConsumer } from "@agentrt/service-kit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { Objm } from "@nats-io/obj";
import type { Logger } from "pino";
import { AGENT_FILES_BUCKET, AGENT_FILES_INDEX_BUCKET, AGENT_KV_BUCKET, AgentFiles, AgentKv, backfillFileIndex } from "./itx/agent-storage.ts";
import type { Quota } from "./itx/usage-meter.ts";
import { DocsIndex } from "./itx/docs-index.ts";
import { createHostCallHandler } from "./itx/host-calls.ts";
import { limitInFlight } from "./itx/in-flight.ts";
import { ListingBudget, type ListingBudgetLimits, ListingGate } from "./itx/listing-budget.ts";
import { guardHostCalls, providerAuthority } from "./authority/script-authority.ts";
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { HostLiveness } from "./host-liveness.ts";
import { PROVIDERS_BUCKET, ProviderRegistry } from "./providers/registry.ts";
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits, type ScriptSandbox } from "./sandbox/quickjs-sandbox.ts";
import { WorkerSandbox, type WorkerReplacedReason } from "./sandbox/worker-sandbox.ts";
import { DEFAULT_HOST_LIVENESS_TTL_MS, DEFAULT_SCRIPT_WORK_ACK_WAIT_MS } from "./config.ts";
import { DEFAULT_SCRIPT_LIMITS, type ScriptLimits, type ScriptRunOutcome, ScriptRunner, type ScriptRunnerDeps } from "./script-runner.ts";
import type { CheckedScript } from "./typecheck/checker-protocol.ts";
import { loadItxDeclarations } from "./typecheck/itx-declarations.ts";
import type { ScriptSourceParts } from "./typecheck/script-source.ts";
import { type CheckerReplacedReason, type CheckOptions, type ScriptCheckService, WorkerChecker } from "./typecheck/worker-checker.ts";
import { ScriptDocsTypecheck } from "./itx/docs-typecheck.ts";

export interface CapabilityHostOptions {
  readonly nc: NatsConnection;
  readonly store: EventStore;
  readonly logger: Logger;
  readonly limits?: Partial<ScriptLimits>;
  readonly sandboxLimits?: SandboxLimits;
  /** Scripts run at once per host. */
  readonly concurrency?: number;
  /** Scripts of one agent run at once per host (more wait behind that agent's own limit). */
  readonly perAgentConcurrency?: number;
  /**
   * Scripts of one tenant (all its agents) run at once per host (default
   * `defaultPerTenantConcurrency`: all but a quarter of the slots, at least one of them left),
   * so the other slots stay free for other tenants. Not applied with tenants off
   * (tenant depth 0: each agent its own, held by `perAgentConcurrency`).
   */
  readonly perTenantConcurrency?: number;
  /** Deliveries of an item naming a script the stream never shows before it is dropped (default MAX_NOT_VISIBLE_DELIVERIES). */
  readonly maxNotVisibleDeliveries?: number;
  /** Typecheck worker threads (each holds a warm checker). */
  readonly typecheckWorkers?: number;
  /** The typecheck worker's entry module (default: the real checker); tests put slow ones here. */
  readonly typecheckWorkerEntry?: URL;
  /** Where scripts are checked: worker threads (the host's default), or this thread (only the benchmark's baseline). */
  readonly checkerThread?: "worker" | "in-thread";
  /** The liveness lease's TTL; `false` turns proof of death off (every started script found unsettled is orphaned). */
  readonly livenessTtlMs?: number | false;
  /** This incarnation's id in the liveness lease (default: hostname, pid and a random suffix). */
  readonly hostId?: string;
  readonly ackWaitMs?: number;
  /** How often other hosts' work claims are probed (a killed host's scripts move on within about this). */
  readonly claimProbeMs?: number;
  readonly providerCallTimeoutMs?: number;
  /** What one agent's workspace may hold (default `DEFAULT_FILE_QUOTA`: 256 MiB in 10 000 files). */
  readonly fileQuota?: Quota;
  /** What one agent's itx.kv keys may hold (default `DEFAULT_KV_QUOTA`: 64 MiB in 10 000 keys). */
  readonly kvQuota?: Quota;
  /** Entries one tenant's listings (itx.kv.list, itx.files.list) may read on this host (default `DEFAULT_LISTING_BUDGET`: 20 000 a second, one full listing at once). */
  readonly listingBudget?: ListingBudgetLimits;
  /**
   * Holds each agent's event stream to a quota: a script's append to a stream at its quota is
   * refused (`quota_exceeded`); the host's own settlements never are. Default: the default quota,
   * counted in this process only (main.ts shares the count through the store's ledger).
   */
  readonly streamQuota?: StreamQuota;
  readonly onTiming?: ScriptRunnerDeps["onTiming"];
  readonly onOutcome?: (outcome: ScriptRunOutcome) => void;
  /** A sandbox worker was replaced (it held a script past its deadline, or it died). */
  readonly onSandboxWorkerReplaced?: (reason: WorkerReplacedReason) => void;
  /** A typecheck worker was replaced (it ran past a script's budget, or it died). */
  readonly onCheckerReplaced?: (reason: CheckerReplacedReason) => void;
  readonly tracer?: ScriptRunnerDeps["tracer"];
  /** The project whose tagged prompt file births sub-agents (`itx.agents.get(p).create()`). */
  readonly project?: ProjectBirth;
  /** JetStream replicas of the buckets and the work stream the host creates (3 in a cluster). */
  readonly replicas?: number;
  /**
   * Follow the store's feed from `afterSequence` (its head at start) and keep the streams
   * scripts were asked for, so a script reads only what its stream gained since (see
   * service-kit's StreamCache). Absent: every script reads its whole stream.
   */
  readonly streamCache?: { readonly afterSequence: number; readonly maxStreams?: number; readonly maxBytes?: number; readonly idleMs?: number };
}

export interface ProjectBirth {
  readonly promptFileText: string;
  readonly project: { readonly name: string; readonly slug: string };
  readonly configRepo: string;
  /** The workspace named in a new agent's boot context (default: `workspace:<stream path>`). */
  readonly workspaceOf?: (streamPath: string) => string;
}

export class CapabilityHost {
  private consumer: WorkConsumer | undefined;
  private fairShare: AgentFairShare | undefined;
  private providerSignature = "";

  private constructor(
    readonly runner: ScriptRunner,
    readonly checker: ScriptCheckService,
    readonly registry: ProviderRegistry,
    private readonly docs: DocsIndex,
    private readonly sandbox: ScriptSandbox,
    private readonly liveness: HostLiveness | undefined,
    private readonly claims: WorkClaims,
    private readonly cache: StreamCache | undefined,
    private readonly options: CapabilityHostOptions,
  ) {}

  static async start(options: CapabilityHostOptions): Promise<CapabilityHost> {
    const { nc, logger } = options;
    const kvm = new Kvm(nc);
    // One worker thread per script that may run at once: a script computing never stalls the
    // host's heartbeats, probes or other scripts. Not awaited: the workers load in the background
    // (seconds on a busy machine) and scripts wait for a ready one, not the host's readiness.
    const sandbox = WorkerSandbox.start(options.sandboxLimits ?? DEFAULT_SANDBOX_LIMITS, {
      workers: options.concurrency ?? 4,
      onWorkerReplaced: (reason, detail) => {
        logger.warn({ reason, detail }, "replaced a script sandbox worker");
        options.onSandboxWorkerReplaced?.(reason);
      },
    });
    const replicas = options.replicas ?? 1;
    // Started while NATS elects leaders (a node restarting), each bucket waits for an answer.
    const [agentKv, providersKv, files, filesIndex] = await Promise.all([
      untilCreated("agent KV bucket", () => kvm.create(AGENT_KV_BUCKET, { history: 1, replicas }), { logger }),
      untilCreated("providers bucket", () => kvm.create(PROVIDERS_BUCKET, { history: 16, replicas }), { logger }),
      untilCreated("agent files bucket", () => new Objm(nc).create(AGENT_FILES_BUCKET, { replicas }), { logger }),
      untilCreated("agent files index bucket", () => kvm.create(AGENT_FILES_INDEX_BUCKET, { history: 1, replicas }), { logger }),
    ]);
    const backfilled = await untilNatsAnswers("agent files index backfill", () => backfillFileIndex(files, filesIndex), { logger });
    if (backfilled > 0) logger.info({ files: backfilled }, "indexed the agent files written before the files index existed");
    const declarations = loadItxDeclarations();
    const checker = await createChecker(options, declarations);
    const hostId = options.hostId ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    // The host's claims and its presence: a killed host's items are handed back, and its running
    // scripts found orphaned, within a probe round (service-kit work-claims).
    const claims = await startWorkClaims({
      nc,
      kind: "script",
      owner: hostId,
      logger,
      replicas,
      ...(options.claimProbeMs === undefined ? {} : { probeEveryMs: options.claimProbeMs }),
    });
    const liveness =
      options.livenessTtlMs === false
        ? undefined
        : await HostLiveness.start({
            nc,
            hostId,
            ttlMs: options.livenessTtlMs ?? DEFAULT_HOST_LIVENESS_TTL_MS,
            replicas,
            logger,
            isConnected: (id) => claims.isAlive(id),
          });
    const docs = new DocsIndex(declarations);
    const registry = new ProviderRegistry(nc, providersKv, logger.child({ component: "providers" }));
    await registry.start();
    const agentFiles = new AgentFiles(files, filesIndex, options.fileQuota, undefined, liveness === undefined ? undefined : { self: hostId, gone: (owner) => liveness.isGone(owner, false) });
    // One for the host: its per-agent queue keeps an agent's writes one at a time across scripts.
    const agentKvStore = new AgentKv(agentKv, options.kvQuota);
    // One for the host: each tenant's listings draw on one budget, whichever of its scripts lists.
    const tenants = tenantsOf(options);
    const listings = new ListingGate({ budget: new ListingBudget(options.listingBudget), ...(tenants === undefined ? {} : { tenantOf: tenants }) });
    // What scripts append through itx is held to the stream quota; the runner's settlements are not.
    const scriptAppends = quotaStore(options.store, options.streamQuota ?? new StreamQuota(options.store));
    const limits = { ...DEFAULT_SCRIPT_LIMITS, ...options.limits };
    // The runner needs the host's check (which refreshes provider declarations) before the host exists.
    const self: { host?: CapabilityHost } = {};
    const check: ScriptCheckService["check"] = (parts, budgetMs, checkOptions) => self.host!.check(parts, budgetMs, checkOptions);
    const cache = options.streamCache === undefined ? undefined : new StreamCache({ store: options.store, logger, ...options.streamCache });
    cache?.start();
    const runner = new ScriptRunner({
      store: options.store,
      ...(cache === undefined ? {} : { readStream: (path: string, offset: number) => cache.eventsThrough(path, offset) }),
      sandbox,
      files: agentFiles,
      check,
      ...(liveness === undefined ? {} : { liveness }),
      wrap: agentCoreWrap,
      limits,
      logger,
      ...(options.onTiming === undefined ? {} : { onTiming: options.onTiming }),
      ...(options.tracer === undefined ? {} : { tracer: options.tracer }),
      // Every itx call is checked against the script's authority before it runs (authority/),
      // and at most MAX_ITX_CALLS_IN_FLIGHT of one script's calls run at once, none starting once
      // the script is over (itx/in-flight.ts).
      hostCalls: (caller, scope, ended) => {
        const docsChecks = new ScriptDocsTypecheck((code) => {
          const trimmed = code.trim();
          const parts = { preamble: scope.preamble, resultsPreamble: scope.resultsPreamble, code: trimmed, wrapped: agentCoreWrap(trimmed) };
          return check(parts, limits.typecheckBudgetMs, { lane: "docs", agent: caller.agentPath });
        }, limits.maxSourceBytes);
        return limitInFlight(guardHostCalls(createHostCallHandler(
          {
            store: scriptAppends,
            kv: agentKvStore,
            files: agentFiles,
            providers: registry,
            docs,
            providerCallTimeoutMs: options.providerCallTimeoutMs ?? 30_000,
            ...(options.project === undefined ? {} : { birthBatch: projectBirthBatch(options.project) }),
            typecheck: (code) => docsChecks.typecheck(code),
            listings,
          },
          {
            ...caller,
            authority: providerAuthority(scope.authority),
            ...(scope.authority.operateWithheld === undefined ? {} : { operateWithheld: scope.authority.operateWithheld }),
          },
        ), scope.authority), undefined, ended);
      },
    });
    self.host = new CapabilityHost(runner, checker, registry, docs, sandbox, liveness, claims, cache, options);
    return self.host;
  }

  /** Starts claiming `work.script.*` items (durable consumer `capability-host`). */
  async consume(): Promise<void> {
    const js = jetstream(this.options.nc);
    const waiting = { logger: this.options.logger };
    const jsm = await untilNatsAnswers("JetStream manager", () => jetstreamManager(this.options.nc), waiting);
    await untilNatsAnswers("work stream", () => ensureWorkStream(jsm, "script", { replicas: this.options.replicas ?? 1, logger: this.options.logger }), waiting);
    const concurrency = this.options.concurrency ?? 4;
    const perAgent = Math.min(concurrency, this.options.perAgentConcurrency ?? 2);
    // Tenants as the stream quota counts them (none at depth 0: each agent its own), each with
    // at most `concurrency` scripts waiting: another tenant always finds claims free. And each
    // running at most `perTenant`: slots are held for as long as a script runs, so turns alone
    // let one tenant's long scripts hold every slot while another's `return 1` waited (red-team).
    const tenants = tenantsOf(this.options);
    const perTenant = tenants === undefined ? undefined : Math.min(concurrency, this.options.perTenantConcurrency ?? defaultPerTenantConcurrency(concurrency));
    const fairShare = new AgentFairShare(
      { total: concurrency, perAgent, waitingPerAgent: perAgent, waitingPerTenant: concurrency, ...(perTenant === undefined ? {} : { perTenant }) },
      tenants,
    );
    this.fairShare = fairShare;
    // Claims beyond the running slots wait in the fair share (heartbeating), so another agent's
    // item is claimed and served while one agent's flood waits behind its own limit.
    const claims = concurrency * 4;
    const retryMs = Math.min(1_000, Math.max(100, Math.floor((this.options.livenessTtlMs || DEFAULT_HOST_LIVENESS_TTL_MS) / 3)));
    this.consumer = await consumeWork(js, jsm, {
      kind: "script",
      durable: "capability-host",
      logger: this.options.logger,
      concurrency: claims,
      ackWaitMs: this.options.ackWaitMs ?? DEFAULT_SCRIPT_WORK_ACK_WAIT_MS,
      claims: this.claims,
      describe: (item) => ({ phase: this.runner.phaseOf(item.streamPath, item.executionId) ?? "waiting for a slot (fair share)" }),
      handler: async (item, context) => {
        const entering = fairShare.enter(item.streamPath);
        // This agent already has its fill of scripts running and waiting here: later.
        if (entering === undefined) return { type: "retry", delayMs: retryMs };
        const leave = await entering;
        // The host is stopping: a script that has not started waiting its turn goes back to the queue.
        if (leave === undefined) return { type: "retry", delayMs: 0 };
        let outcome: ScriptRunOutcome;
        try {
          outcome = await this.runner.handle(item.streamPath, item.executionId, item.requestedOffset, context.signal);
        } finally {
          leave();
        }
        // (not `onOutcome?.(await …)`: an optional call skips evaluating its arguments)
        this.options.onOutcome?.(outcome);
        // Started by a host that still lives: come back until it settles or its lease expires.
        if (outcome === "runner-alive") return { type: "retry", delayMs: retryMs };
        if (outcome === "not-visible") {
          const next = notVisibleOutcome(context.deliveryCount, this.options.maxNotVisibleDeliveries);
          if (next.type === "drop") {
            this.options.logger.warn(
              { streamPath: item.streamPath, executionId: item.executionId, requestedOffset: item.requestedOffset, deliveryCount: context.deliveryCount },
              "the stream still ends before the script this work item names; dropping it (a real request is issued again by the reducer)",
            );
          }
          return next;
        }
        return { type: "ack" };
      },
    });
  }

  /** Typechecks with the live providers' declarations (refreshed when the registry changed). */
  check(parts: ScriptSourceParts, budgetMs: number, options?: CheckOptions): Promise<CheckedScript> {
    const live = this.registry.live();
    const signature = live.map((p) => `${p.namespace}:${p.instanceId}:${p.declarations.length}`).join("|");
    if (signature !== this.providerSignature) {
      const declarations = new Map(live.map((p) => [p.namespace, p.declarations]));
      this.checker.setProviderDeclarations(declarations);
      this.docs.rebuild(declarations);
      this.providerSignature = signature;
    }
    return this.checker.check(parts, budgetMs, options);
  }

  /** Claiming scripts from the work queue (readiness). */
  consuming(): boolean {
    return this.consumer?.running() ?? false;
  }

  async stop(): Promise<void> {
    this.fairShare?.close();
    await this.consumer?.stop();
    await this.claims.stop();
    this.registry.stop();
    await this.liveness?.stop();
    await this.sandbox.close();
    await this.checker.close();
    await this.cache?.stop();
  }
}

/**
 * Scripts one tenant runs at once on a host by default: all but a quarter of its slots (at least
 * one left for other tenants; 3 of 4), so a tenant's agents still run more than one agent may.
 */
export const defaultPerTenantConcurrency = (concurrency: number): number => Math.max(1, concurrency - Math.max(1, Math.floor(concurrency / 4)));

/** The tenant of an agent as the stream quota counts them, or undefined at depth 0 (no tenants: each agent its own). */
function tenantsOf(options: CapabilityHostOptions): ((agent: string) => string) | undefined {
  const depth = options.streamQuota?.tenantLimits.depth ?? DEFAULT_TENANT_QUOTA.depth;
  return depth === 0 ? undefined : (agent) => tenantOf(agent, depth);
}

async function createChecker(options: CapabilityHostOptions, declarations: string): Promise<ScriptCheckService> {
  if (options.checkerThread === "in-thread") {
    // Loaded only here: the host's own thread never loads the TypeScript compiler otherwise.
    const { InThreadChecker } = await import("./typecheck/in-thread-checker.ts");
    return new InThreadChecker(declarations);
  }
  // Not awaited: the checkers warm in the background, scripts wait for a warm one.
  return new WorkerChecker({
    workers: options.typecheckWorkers ?? 2,
    itxDeclarations: declarations,
    ...(options.typecheckWorkerEntry === undefined ? {} : { entry: options.typecheckWorkerEntry }),
    ...(tenantsOf(options) === undefined ? {} : { tenantOf: tenantsOf(options) }),
    onWarm: (warmMs) => options.logger.info({ warmMs: Math.round(warmMs) }, "typecheck worker warm"),
    onWorkerReplaced: (reason, detail) => {
      options.logger.warn({ reason, detail }, "replaced a typecheck worker");
      options.onCheckerReplaced?.(reason);
    },
  });
}

function projectBirthBatch(project: ProjectBirth): (streamPath: string) => ReturnType<typeof birthBatch> {
  return (streamPath) =>
    birthBatch({
      promptFileText: project.promptFileText,
      project: project.project,
      configRepo: project.configRepo,
      streamPath,
      workspace: project.workspaceOf?.(streamPath) ?? `workspace:${streamPath}`,
    });
}
