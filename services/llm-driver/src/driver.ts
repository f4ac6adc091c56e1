// The llm-driver service object: claims `work.llm.*` items from the durable pull consumer
// `llm-driver` (heartbeating `working()` while a call streams), runs each through the
// request runner, and answers interrupts. Each claim is recorded (service-kit work-claims), so
// when a driver dies mid-reply a surviving one hands its item back to the queue within a probe
// round, not the ack wait. Everything it needs is passed in, so tests run it
// in-process against a real nats-server and the composition root only wires.

import type { Tracer } from "@opentelemetry/api";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { AgentFairShare, consumeWork, type Logger, notVisibleOutcome, type PartitionBatchSink, startWorkClaims, StreamCache, type WorkClaims, type WorkConsumer, type WorkOutcome, workOutcomeOfError } from "@agentrt/service-kit";
import type { AgentEvent } from "@agentrt/contract";
import { DEFAULT_TENANT_QUOTA, type EventStore, tenantOf } from "@agentrt/streams";
import { DEFAULT_DRAIN_MS, DEFAULT_WORK_ACK_WAIT_MS, DEFAULT_WORK_HEARTBEAT_MS } from "./config.ts";
import { listenForInterrupts } from "./interrupts.ts";
import type { DriverMetrics } from "./metrics.ts";
import type { ModelClient } from "./model-client.ts";
import { OfflineModelClient } from "./offline-client.ts";
import { OpenAiModelClient } from "./openai-client.ts";
import { providerOfModel, type ModelRoute, type ProvidersConfig } from "./providers.ts";
import { RequestRunner, type DriverSettings, type RunOutcome } from "./request-runner.ts";
import { RequestStop, RunningRequests } from "./running-requests.ts";

export const LLM_DRIVER_DURABLE = "llm-driver";

/** How long a work item whose group has its fill of calls waiting here stays back before it is delivered again (doubling per delivery, up to `BUSY_RETRY_MAX_MS`). */
export const BUSY_RETRY_MS = 250;
export const BUSY_RETRY_MAX_MS = 5_000;

/**
 * The driver's slots for model calls, shared fairly between groups (a provider and a tenant):
 * `concurrency` calls at once, groups taking turns for free slots, and past them `spare` slots
 * (default half the concurrency; 0: none, `concurrency` is then a hard bound) for a group running
 * fewer than two, so calls that hold their slots for long (a provider trickling its reply until
 * the request expires) cannot shut every other tenant or provider out. A group may have a
 * quarter of the concurrency waiting; more of its items go back to the queue (`BUSY_RETRY_MS`),
 * so the claims stay open for other groups' items.
 */
export function driverSlotShare(
  concurrency: number,
  tenantDepth: number,
  spare = defaultSpareSlots(concurrency),
): { share: AgentFairShare; keyOf: (streamPath: string, model: string) => string; claims: number } {
  if (!Number.isInteger(spare) || spare < 0) throw new RangeError(`spare slots must be an integer ≥ 0, got ${String(spare)}`);
  const waiting = Math.max(1, Math.floor(concurrency / 4));
  // A slot key names its group and its agent; the group is the key's first two entries.
  const keyOf = (streamPath: string, model: string): string => JSON.stringify([providerOfModel(model), tenantDepth === 0 ? streamPath : tenantOf(streamPath, tenantDepth), streamPath]);
  const groupOf = (key: string): string => JSON.stringify((JSON.parse(key) as string[]).slice(0, 2));
  const share = new AgentFairShare(
    { total: concurrency, perAgent: 1, waitingPerAgent: 1, waitingPerTenant: waiting, ...(spare === 0 ? {} : { spare: { perTenant: 2, extra: spare } }) },
    groupOf,
  );
  return { share, keyOf, claims: concurrency + spare + waiting };
}

/** Spare slots by default: half the concurrency (none for a concurrency of 1). */
export const defaultSpareSlots = (concurrency: number): number => Math.floor(concurrency / 2);

/** The delay of a busy item's next delivery: doubling with its deliveries, so a flood's bounces thin out. */
export function busyRetryMs(deliveryCount: number): number {
  return Math.min(BUSY_RETRY_MAX_MS, BUSY_RETRY_MS * 2 ** Math.min(10, Math.max(0, deliveryCount - 1)));
}

/** A driver incarnation's claims owner id: unique per process start. */
export const driverClaimOwner = (): string => `llm-driver-${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;

export interface LlmDriverDeps {
  /** OpenTelemetry tracer for the driver's span of each turn. */
  readonly tracer?: Tracer;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly store: EventStore;
  readonly providers: ProvidersConfig;
  readonly logger: Logger;
  readonly metrics: DriverMetrics;
  readonly settings: DriverSettings;
  readonly work?: {
    readonly ackWaitMs?: number;
    readonly heartbeatMs?: number;
    readonly concurrency?: number;
    /** Deliveries of an item naming a request the stream never shows before it is dropped (default MAX_NOT_VISIBLE_DELIVERIES). */
    readonly maxNotVisibleDeliveries?: number;
    /** Leading path segments naming a stream's tenant for the fair share of slots (default: the tenant quota's, 2; 0: each agent its own). */
    readonly tenantDepth?: number;
    /** Spare slots past the concurrency for a group below its share (default `defaultSpareSlots`; 0: the concurrency is a hard bound). */
    readonly spareSlots?: number;
    /**
     * On stop, how long the model calls running here may go on to their end (default
     * DEFAULT_DRAIN_MS); those still running then go back to the queue. 0: at once.
     */
    readonly drainMs?: number;
  };
  /** Work claims (on by default): how often other drivers' claims are probed; this incarnation's id. `false`: only the ack wait frees a dead driver's item. */
  readonly claims?: { readonly probeEveryMs?: number; readonly owner?: string; readonly replicas?: number } | false;
  /**
   * Work claims the caller started (and stops, after this driver): the composition root starts
   * them before anything else, so a restarted driver hands its predecessor's items back to the
   * queue while the rest of it starts. Replaces `claims`.
   */
  readonly startedClaims?: WorkClaims;
  readonly nowMs?: () => number;
  /**
   * Follow the store's partition feed from this position and keep recently driven streams in
   * memory, so a turn need not re-read its stream. Omit to read the stream on every turn.
   * `"fed by caller"`: the reducer in this process feeds it its partitions' batches (`streamFeed`).
   */
  readonly streamCache?: { readonly afterSequence: number | "fed by caller"; readonly maxStreams?: number; readonly maxBytes?: number; readonly idleMs?: number };
  /** Replaces the model clients (defaults: the OpenAI adapter, or the offline model when no provider is configured). */
  readonly modelFor?: (route: ModelRoute | null) => ModelClient;
}

export class LlmDriver {
  private readonly running = new RunningRequests();
  private readonly runner: RequestRunner;
  private consumer: WorkConsumer | undefined;
  private claims: WorkClaims | undefined;
  /** The claims this driver started itself (and so stops). */
  private ownClaims: WorkClaims | undefined;
  private interrupts: Subscription | undefined;
  private readonly cache: StreamCache | undefined;
  private readonly openai = new OpenAiModelClient();
  /** Requests handed over in this process (`runHandedOver`) being run now. */
  private readonly handedOver = new Set<Promise<WorkOutcome>>();
  /** Work items from the queue being run now. */
  private readonly queueRuns = new Set<Promise<WorkOutcome>>();
  /** Set by stop(): nothing new is taken, the runs under way may finish (the drain). */
  private draining = false;
  /** Aborted by stop() once the drain is over: the runs left stop, and go back to the queue. */
  private readonly stopping = new AbortController();
  private readonly slots: ReturnType<typeof driverSlotShare>;

  constructor(private readonly deps: LlmDriverDeps) {
    this.slots = driverSlotShare(this.concurrency, deps.work?.tenantDepth ?? DEFAULT_TENANT_QUOTA.depth, deps.work?.spareSlots);
    const { share, keyOf } = this.slots;
    const offline = new OfflineModelClient();
    const cache =
      deps.streamCache === undefined
        ? undefined
        : new StreamCache({ store: deps.store, logger: deps.logger, ...deps.streamCache });
    this.cache = cache;
    this.runner = new RequestRunner({
      ...(cache === undefined
        ? {}
        : {
            readStream: (path: string, offset: number) => cache.eventsThrough(path, offset),
            followStream: (path: string, fromOffset: number, onEvents: (events: readonly AgentEvent[]) => void) => cache.watch(path, fromOffset, onEvents),
          }),
      store: deps.store,
      ...(deps.streamCache?.maxStreams === undefined ? {} : { maxFoldedStreams: deps.streamCache.maxStreams }),
      providers: deps.providers,
      logger: deps.logger,
      metrics: deps.metrics,
      running: this.running,
      settings: deps.settings,
      nowMs: deps.nowMs ?? Date.now,
      // A stopping driver's share answers `undefined` at once: the run ends "shutdown", its item back at once.
      slot: (streamPath, model) => share.enter(keyOf(streamPath, model)),
      ...(deps.tracer === undefined ? {} : { tracer: deps.tracer }),
      modelFor: deps.modelFor ?? ((route) => (route === null ? offline : this.openai)),
    });
  }

  /**
   * Where the reducer in this process feeds the driver's stream cache the batches of the
   * partitions it owns (`streamCache.afterSequence: "fed by caller"`); undefined otherwise.
   */
  get streamFeed(): PartitionBatchSink | undefined {
    return this.deps.streamCache?.afterSequence === "fed by caller" ? this.cache : undefined;
  }

  get offline(): boolean {
    return Object.keys(this.deps.providers).length === 0;
  }

  get runningCount(): number {
    return this.running.size;
  }

  /** The requests waiting here for a slot of their fair share. */
  waitingForSlot(): Array<{ readonly streamPath: string; readonly requestOffset: number }> {
    return this.running.waitingForSlot();
  }

  async start(): Promise<void> {
    this.cache?.start();
    this.interrupts = listenForInterrupts(this.deps.nc, this.running, this.deps.logger);
    const claims = this.deps.claims;
    if (this.deps.startedClaims !== undefined) this.claims = this.deps.startedClaims;
    else if (claims !== false) {
      this.ownClaims = await startWorkClaims({
        nc: this.deps.nc,
        kind: "llm",
        owner: claims?.owner ?? driverClaimOwner(),
        logger: this.deps.logger,
        ...(claims?.probeEveryMs === undefined ? {} : { probeEveryMs: claims.probeEveryMs }),
        ...(claims?.replicas === undefined ? {} : { replicas: claims.replicas }),
      });
      this.claims = this.ownClaims;
    }
    this.consumer = await consumeWork(this.deps.js, this.deps.jsm, {
      kind: "llm",
      durable: LLM_DRIVER_DURABLE,
      logger: this.deps.logger,
      ackWaitMs: this.deps.work?.ackWaitMs ?? DEFAULT_WORK_ACK_WAIT_MS,
      heartbeatMs: this.deps.work?.heartbeatMs ?? DEFAULT_WORK_HEARTBEAT_MS,
      // Past the slots: spare slots and items waiting their group's turn (heartbeating).
      concurrency: this.slots.claims,
      ...(this.claims === undefined ? {} : { claims: this.claims }),
      handler: async (item, context): Promise<WorkOutcome> => {
        const run = this.runItem(item.streamPath, item.requestOffset, context.signal, context.deliveryCount);
        this.queueRuns.add(run);
        try {
          return await run;
        } finally {
          this.queueRuns.delete(run);
        }
      },
    });
  }

  /**
   * Runs a request handed over by the agent-reducer in this process, without a work item: the
   * run a delivered item gets (it re-reads the stream, so an offset that holds no open request
   * is acked as such; it takes a slot of the same fair share). Undefined when this driver is
   * stopping, or handles as many requests as its concurrency, handed over and from the queue
   * together (the queue's consumer is bounded by its claims on its own, so a backlog there can
   * add as many again): the caller
   * puts the item on the work queue instead. Resolves to what the queue would have been told,
   * so a run that must be tried again (stopped by shutdown, its request not read yet) goes to
   * the queue, where any driver takes it.
   */
  runHandedOver(streamPath: string, requestOffset: number): Promise<WorkOutcome> | undefined {
    if (this.draining || this.handedOver.size + this.queueRuns.size >= this.concurrency) return undefined;
    const run: Promise<WorkOutcome> = this.runItem(streamPath, requestOffset, this.stopping.signal)
      .catch((error: unknown) => {
        this.deps.logger.warn({ err: error, streamPath, requestOffset }, "a handed-over request failed to run; it goes to the work queue");
        return workOutcomeOfError(error, 1);
      })
      .finally(() => {
        this.handedOver.delete(run);
      });
    this.handedOver.add(run);
    return run;
  }

  /** One run of a request, delivered or handed over, counted, and what the queue is told of it. */
  private async runItem(streamPath: string, requestOffset: number, signal: AbortSignal, deliveryCount = 1): Promise<WorkOutcome> {
    const outcome = await this.runner.run(streamPath, requestOffset, signal);
    this.deps.metrics.workItem(outcome);
    if (outcome === "not-visible") {
      const next = notVisibleOutcome(deliveryCount, this.deps.work?.maxNotVisibleDeliveries);
      if (next.type === "drop") this.deps.logger.warn({ streamPath, requestOffset, deliveryCount }, "the stream still ends before the request this work item names; dropping it (a real request is re-driven by the reducer)");
      return next;
    }
    return workOutcome(outcome, deliveryCount);
  }

  private get concurrency(): number {
    return this.deps.work?.concurrency ?? 32;
  }

  /** Claiming turns from the work queue (readiness). */
  consuming(): boolean {
    return this.consumer?.running() ?? false;
  }

  /**
   * Stops taking requests, lets the model calls under way finish for up to the drain (a rollout
   * then neither cuts a reply off nor pays for it twice), then stops those left: their items go
   * back to the queue at once and another driver runs them. Interrupts are still answered while
   * it drains, and its claims and heartbeats go on.
   */
  async stop(): Promise<void> {
    this.draining = true;
    // Calls waiting for a slot end "shutdown": their items go back to the queue at once.
    this.slots.share.close();
    await this.consumer?.stopTaking();
    await this.drain(this.deps.work?.drainMs ?? DEFAULT_DRAIN_MS);
    this.stopping.abort();
    this.running.stopAll(new RequestStop("shutdown", "the driver is shutting down"));
    await this.consumer?.stop();
    // Stopped above, so each ends at once (a settlement in flight finishes first).
    await Promise.allSettled([...this.handedOver]);
    await this.ownClaims?.stop();
    this.interrupts?.unsubscribe();
    await this.cache?.stop();
    this.openai.close();
  }

  /** Waits for the runs under way to end, for at most `ms`; says how the drain went. */
  private async drain(ms: number): Promise<void> {
    const runs = [...this.handedOver, ...this.queueRuns];
    if (runs.length === 0) return;
    const startedAt = Date.now();
    this.deps.logger.info({ runs: runs.length, drainMs: ms }, "stopping: letting the model calls under way finish");
    let timer: NodeJS.Timeout | undefined;
    const ended = await Promise.race([
      Promise.allSettled(runs).then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
    clearTimeout(timer);
    if (ended) this.deps.logger.info({ runs: runs.length, tookMs: Date.now() - startedAt }, "drained: every model call under way finished");
    else this.deps.logger.warn({ left: this.handedOver.size + this.queueRuns.size, drainMs: ms }, "drain limit reached: the model calls still running go back to the queue");
  }
}

/**
 * A run stopped by shutdown goes back to the queue at once so another driver takes it; one
 * without a slot (its group has its fill waiting here) a little later.
 */
function workOutcome(outcome: Exclude<RunOutcome, "not-visible">, deliveryCount: number): WorkOutcome {
  if (outcome === "shutdown") return { type: "retry", delayMs: 0 };
  if (outcome === "busy") return { type: "retry", delayMs: busyRetryMs(deliveryCount) };
  return { type: "ack" };
}
