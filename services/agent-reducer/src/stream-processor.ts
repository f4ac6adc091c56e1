// Reduces ONE agent stream inside a partition worker: folds each delivered event with the pure
// core, queues the per-event consequences, and after each burst of events decides at the head
// (schedule, resume, pause, expire) and hands open requests and scripts to the work queues.
//
// Everything this appends is idempotency-keyed, so a replica that replays events another
// replica already reacted to, or two replicas briefly overlapping, commit nothing twice.
// Decisions are appended with `expectedLastOffset` = the last folded offset: the reducer only
// acts on the head of the stream, and a stream that moved on is simply decided again once the
// newer events arrive.
//
// What it holds besides the folded state is bounded: the store itself rejects a key appended
// twice, so only the keys of recent events are kept, to skip reactions a replay shows as done
// without a round trip.

import type { AgentEvent, EventInput } from "@agentrt/contract";
import { idempotencyKeysOf, isAgentRuntimeError } from "@agentrt/contract";
import {
  type AgentState,
  type ReactionState,
  type LiveLaneState,
  PRODUCTION_REACTION_POLICY,
  type ReactionPolicy,
  applyChunksEvent,
  computeRuntime,
  createLiveLaneState,
  decideAtHead,
  endRequest,
  StepwiseFold,
  initialAgentState,
  interruptBatch,
  liveDialectOf,
  publishesRuntime,
  reactToEvent,
  workToRedrive,
} from "@agentrt/agent-core";
import { timerDelayMs, type Logger } from "@agentrt/service-kit";
import type { ReducerEffects } from "./effects.ts";

/** How many recent idempotency keys a processor remembers (a replay's burst, not the stream). */
const RECENT_KEYS = 256;

class RecentKeys {
  private readonly keys = new Set<string>();
  add(key: string): void {
    this.keys.delete(key);
    this.keys.add(key);
    if (this.keys.size > RECENT_KEYS) this.keys.delete(this.keys.values().next().value as string);
  }
  has(key: string): boolean {
    return this.keys.has(key);
  }
}

export class StreamProcessor {
  /** The agent's fold, event by event (one draft between events: a long stream costs no copy per event). */
  private fold: StepwiseFold;
  /** The offset the agent's stored snapshot covers (0: none); the state is clean when equal. */
  snapshotOffset = 0;
  /** The store's key index is known to hold every key of this stream (kept in its snapshot). */
  keysIndexed = false;
  /** Events folded since the last snapshot. */
  eventsSinceSnapshot = 0;
  /** When an event was last folded or work last finished here (epoch ms), for idle snapshots and eviction. */
  lastActivityMs: number;
  private readonly seenKeys = new RecentKeys();
  private pendingReactions: EventInput[][] = [];
  private pendingInterrupts: number[] = [];
  private readonly unsettledScripts = new Map<string, number>();
  private readonly publishedScripts = new Set<string>();
  /** Work items whose last publish failed: published again under a new message id (see `publishWork`). */
  private readonly unconfirmedWork = new Set<string>();
  private publishedRequestOffset = 0;
  /**
   * The highest offset this processor's own appends (reactions, interrupts) are known to have
   * stored: while it is ahead of the folded state, a decision at the head would be refused.
   */
  private appendedThrough = 0;
  private lastRuntimeJson = "";
  private wakeTimer: NodeJS.Timeout | undefined;
  private flushScheduled = false;
  /** Flushes held while the agent is brought in (`holdFlushes`), and one asked for meanwhile. */
  private flushesHeld = false;
  private flushWaiting = false;
  private chain: Promise<void> = Promise.resolve();
  private liveLane: LiveLaneState | undefined;
  private previews: Promise<void> = Promise.resolve();
  private flushing = false;
  private closed = false;
  /** Work re-issued since the stream last moved (the core's backoff counts these). */
  private redrivesSinceProgress = 0;
  /**
   * When a chunk of this agent's streaming reply last arrived on the live lane (epoch ms); at
   * first, when this processor was built: a takeover hands the work over with its usual item
   * (deduplicated if the old one is still queued), and a second, re-issued item at that moment
   * would only make two drivers call the model for one request.
   */
  private observedProgressAtMs: number;

  constructor(
    readonly streamPath: string,
    private readonly effects: ReducerEffects,
    private readonly logger: Logger,
    restored?: AgentState,
    private readonly policy: ReactionPolicy = PRODUCTION_REACTION_POLICY,
    /** Quiet time before outstanding work is issued again (the core's default when absent). */
    private readonly redriveAfterMs?: number,
  ) {
    this.fold = new StepwiseFold(restored ?? initialAgentState(streamPath));
    // A restored agent's running scripts are handed to the host again (the work item is
    // deduplicated; a script already started is the host's to recover).
    for (const script of this.folded.activeScriptExecutions) this.unsettledScripts.set(script.executionId, script.requestedOffset);
    this.lastActivityMs = effects.now();
    this.observedProgressAtMs = this.lastActivityMs;
  }

  /**
   * Called when a flush leaves nothing queued: every event folded so far has been reacted to
   * (the partition worker's checkpoint may then move past this agent's batches).
   */
  onIdle: (() => void) | undefined;

  /** The agent's state folded so far. */
  get state(): AgentState {
    return this.fold.state;
  }

  /** The state without its context: what decisions and reactions read (nothing copied). */
  private get folded(): ReactionState {
    return this.fold.view;
  }

  /** Folds one delivered event and records what must follow from it. */
  apply(event: AgentEvent): void {
    if (event.offset <= this.fold.view.lastFoldedOffset) return; // replayed twice: once each
    const { before, after } = this.fold.apply(event);
    this.eventsSinceSnapshot += 1;
    this.lastActivityMs = this.effects.now();
    this.redrivesSinceProgress = 0;
    if (event.idempotencyKey !== undefined) this.seenKeys.add(event.idempotencyKey);
    if (event.type === "capability-host/script-run-requested") {
      this.unsettledScripts.set(event.payload.executionId, event.offset);
    } else if (event.type === "capability-host/script-run-settled") {
      this.unsettledScripts.delete(event.payload.executionId);
    } else if (event.type === "agent/llm-request-settled" && this.liveLane !== undefined) {
      // The reply is durable now; its preview lane (the whole reply text) is dropped.
      this.liveLane = endRequest(this.liveLane, event.payload.requestOffset);
      if (this.liveLane.requests.size === 0) this.liveLane = undefined;
    }
    const reaction = reactToEvent(before, event, after, this.policy);
    if (reaction.appends.length > 0) this.pendingReactions.push(...reaction.appends);
    if (reaction.interrupt !== null) this.pendingInterrupts.push(reaction.interrupt.requestOffset);
    this.scheduleFlush();
  }

  /**
   * Turns a live-lane chunk of a streaming reply into previews of its prose and script
   * (`render/message-delta`, `render/script-delta`) and publishes them, in order, when this
   * agent's replies are interpreted. Best effort like the lane: nothing durable depends on it.
   */
  applyLive(event: AgentEvent): void {
    // Still being brought in: its state is not the stream's yet (the lane is best effort).
    if (this.closed || this.flushesHeld || event.type !== "agent/llm-response-chunks") return;
    // A reply streaming is a driver at work: its request is not re-issued meanwhile.
    this.observedProgressAtMs = this.effects.now();
    this.redrivesSinceProgress = 0;
    const dialect = liveDialectOf(this.folded, this.policy);
    if (dialect === undefined) return;
    // One request streams at a time; a second lane covers chunks of the previous one arriving late.
    if (this.liveLane?.dialect !== dialect) this.liveLane = createLiveLaneState({ dialect, maxRequests: 2 });
    const step = applyChunksEvent(this.liveLane, event);
    this.liveLane = step.state;
    if (step.deltas.length === 0) return;
    const foldedOffset = this.folded.lastFoldedOffset;
    this.previews = this.previews
      .then(() => this.effects.publishPreviews(this.streamPath, step.deltas, foldedOffset))
      .catch((error: unknown) => this.logger.debug({ err: error }, "could not publish reply previews"));
  }

  /** Requests whose reply is being previewed (their lanes hold the reply text so far). */
  get previewedRequests(): number[] {
    return [...(this.liveLane?.requests.keys() ?? [])];
  }

  /** True when nothing is queued or running: every folded event has been reacted to. */
  isIdle(): boolean {
    return !this.flushScheduled && !this.flushWaiting && !this.flushing && this.pendingReactions.length === 0 && this.pendingInterrupts.length === 0;
  }

  /**
   * True while the agent has something that will happen without a new event: a timer
   * (debounce, backoff, expiry), an open request, a running script, or unfinished reactions.
   * Such an agent stays in memory; a successor wakes it at takeover.
   */
  hasPendingWork(): boolean {
    return !this.isIdle() || this.wakeTimer !== undefined || this.folded.openRequest !== null || this.folded.activeScriptExecutions.length > 0;
  }

  /** True when the stored snapshot is older than the folded state. */
  isDirty(): boolean {
    return this.folded.lastFoldedOffset > this.snapshotOffset;
  }

  /** True when dropping this processor loses nothing: it is rebuilt from its snapshot on its next event. */
  canEvict(nowMs: number, idleMs: number): boolean {
    return !this.isDirty() && !this.hasPendingWork() && this.liveLane === undefined && nowMs - this.lastActivityMs >= idleMs;
  }

  /** Runs queued work now and waits for it (tests, snapshots, shutdown). */
  settle(): Promise<void> {
    return this.chain;
  }

  /**
   * Holds this processor's flushes while its events are folded in slices (a rebuild lets the
   * event loop turn every so often): a flush in between decided and reacted at a half-folded
   * offset (it handed a driver a request the stream had already settled). `release` folds on.
   */
  holdFlushes(): { release(): void } {
    this.flushesHeld = true;
    return {
      release: () => {
        this.flushesHeld = false;
        if (this.flushWaiting) {
          this.flushWaiting = false;
          this.scheduleFlush();
        }
      },
    };
  }

  scheduleFlush(): void {
    if (this.flushesHeld && !this.closed) {
      this.flushWaiting = true;
      return;
    }
    if (this.flushScheduled || this.closed) return;
    this.flushScheduled = true;
    // Deferred so a burst of delivered events (a replay after takeover) is folded first and
    // reactions that later events already show as done are skipped without a round trip.
    setImmediate(() => {
      this.flushScheduled = false;
      this.chain = this.chain.then(() => this.flush()).catch((error: unknown) => {
        this.logger.error({ err: error, streamPath: this.streamPath }, "flush failed; retrying shortly");
        this.retryLater();
      });
    });
  }

  close(): void {
    this.closed = true;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
  }

  private retryLater(): void {
    if (this.closed) return;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = setTimeout(() => this.scheduleFlush(), 500);
  }

  private async flush(): Promise<void> {
    if (this.closed) return;
    this.flushing = true;
    try {
      await this.appendReactions();
      await this.runInterrupts();
      await this.handOffWork();
      await this.decide();
      await this.publishRuntime();
    } finally {
      this.flushing = false;
      this.lastActivityMs = this.effects.now();
    }
    if (this.isIdle()) this.onIdle?.();
  }

  private async appendReactions(): Promise<void> {
    while (this.pendingReactions.length > 0) {
      const batch = this.pendingReactions[0]!;
      const keys = idempotencyKeysOf(batch);
      if (keys.length === 0 || !keys.every((k) => this.seenKeys.has(k))) {
        const stored = await this.effects.append(this.streamPath, batch).catch((error: unknown) => {
          if (isAgentRuntimeError(error) && !error.retryable) {
            this.logger.error({ err: error, streamPath: this.streamPath, batch }, "dropping a reaction the store rejects");
            return undefined;
          }
          throw error;
        });
        if (stored !== undefined) this.noteAppended(stored.events);
      }
      this.pendingReactions.shift();
    }
  }

  private async runInterrupts(): Promise<void> {
    while (this.pendingInterrupts.length > 0) {
      const requestOffset = this.pendingInterrupts[0]!;
      const partialText = await this.effects.interruptDriver(this.streamPath, requestOffset);
      this.noteAppended((await this.effects.append(this.streamPath, interruptBatch(requestOffset, partialText))).events);
      this.pendingInterrupts.shift();
    }
  }

  private noteAppended(events: readonly AgentEvent[]): void {
    for (const event of events) if (event.offset > this.appendedThrough) this.appendedThrough = event.offset;
  }

  private async handOffWork(): Promise<void> {
    const open = this.folded.openRequest;
    if (open && open.requestedAtOffset !== this.publishedRequestOffset) {
      await this.publishLlmWork(open.requestedAtOffset);
      this.publishedRequestOffset = open.requestedAtOffset;
    }
    for (const [executionId, requestedOffset] of this.unsettledScripts) {
      if (this.publishedScripts.has(executionId)) continue;
      await this.publishScriptWork(requestedOffset, executionId);
      this.publishedScripts.add(executionId);
    }
  }

  /**
   * A work item's publish, under its usual message id until a publish of it failed, under a new
   * one after that. A failed publish's outcome is unknown, and the long soak saw nats-server 2.9
   * leave such an item's id unusable: every later publish of the same item timed out, every 5 s
   * for a minute, until the re-issue under a new id went through at once. A second copy of an
   * item is harmless (items are hints; a worker acts only on what the agent's stream says).
   */
  private async publishWork(key: string, publish: (fresh: boolean) => Promise<void>, alwaysFresh = false): Promise<void> {
    try {
      await publish(alwaysFresh || this.unconfirmedWork.has(key));
      this.unconfirmedWork.delete(key);
    } catch (error) {
      this.unconfirmedWork.add(key);
      throw error;
    }
  }

  private publishLlmWork(requestOffset: number, redrive = false): Promise<void> {
    return this.publishWork(`llm:${requestOffset}`, (fresh) => this.effects.publishLlmWork(this.streamPath, requestOffset, fresh ? { redrive: true } : undefined), redrive);
  }

  private publishScriptWork(requestedOffset: number, executionId: string, redrive = false): Promise<void> {
    return this.publishWork(`script:${executionId}`, (fresh) => this.effects.publishScriptWork(this.streamPath, requestedOffset, executionId, fresh ? { redrive: true } : undefined), redrive);
  }

  private async publishRuntime(): Promise<void> {
    if (!publishesRuntime(this.folded)) return;
    const runtime = computeRuntime(this.folded);
    const json = JSON.stringify(runtime);
    if (json === this.lastRuntimeJson) return;
    this.lastRuntimeJson = json;
    await this.effects.publishRuntime(this.streamPath, {
      runtime,
      sinceOffset: this.folded.lastFoldedOffset,
      since: new Date(this.folded.lastFoldedAtMs || this.effects.now()).toISOString(),
    });
  }

  private async decide(): Promise<void> {
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    // The reducer drives no request itself: an open request is handed to the work queue
    // (deduplicated there) and expired by the clock when nobody settles it.
    const decision = decideAtHead(this.folded, { nowMs: this.effects.now() });
    // Our own reaction landed after what is folded (the user's next message took the offset it
    // raced for): a decision now would be refused, and its request's speculative hand-off would
    // name the reaction's offset, a work item a driver reads only to ack. The feed brings the
    // reaction, and the flush that follows it decides.
    const behindOwnAppends = this.appendedThrough > this.folded.lastFoldedOffset;
    for (const batch of behindOwnAppends ? [] : decision.appends) {
      const keys = idempotencyKeysOf(batch);
      if (keys.length > 0 && keys.every((k) => this.seenKeys.has(k))) continue;
      const expectedLastOffset = this.folded.lastFoldedOffset;
      // A request is handed to the drivers WHILE it is appended, not after: an at-head append
      // that commits puts its first event at exactly expectedLastOffset + 1, so the work item
      // can name it before the store says so — one round trip less before the model has the
      // turn. The item is only a hint: a driver drives nothing until it reads the request on
      // the stream (it waits for the feed to bring it), so nothing is settled against a request
      // that is not durable. If the append does not commit, that offset holds another event
      // (a conflict means the stream moved past it) and the driver acks the item as not open.
      const speculative = handsOffRequest(batch) ? expectedLastOffset + 1 : undefined;
      const [appended, published] = await Promise.allSettled([
        this.effects.appendAtHead(this.streamPath, batch, expectedLastOffset),
        speculative === undefined || speculative === this.publishedRequestOffset ? undefined : this.publishLlmWork(speculative),
      ]);
      if (appended.status === "rejected") throw appended.reason;
      const outcome = appended.value;
      // The stream moved on (a conflict) or the work was done already: decide again when the
      // newer events arrive, which they do through the feed.
      if (outcome.status !== "committed") return;
      const request = outcome.events.find((e) => e.type === "agent/llm-request-requested");
      if (request === undefined || request.offset === this.publishedRequestOffset) continue;
      // The work item is deduplicated, so handing the request over again later is a no-op.
      if (request.offset !== speculative || published.status === "rejected") await this.publishLlmWork(request.offset);
      this.publishedRequestOffset = request.offset;
    }
    const checkAtMs = await this.redrive();
    const wakeAtMs = decision.wakeAtMs === null ? checkAtMs : checkAtMs === null ? decision.wakeAtMs : Math.min(decision.wakeAtMs, checkAtMs);
    if (wakeAtMs !== null) {
      // A wake past a timer's reach fires early and is re-armed by the next decision.
      this.wakeTimer = setTimeout(() => this.scheduleFlush(), timerDelayMs(wakeAtMs - this.effects.now()));
    }
  }

  /**
   * Issues outstanding work again when the stream has been quiet too long (the core's
   * `workToRedrive`): a lost work item must not leave a request or a script waiting for its
   * expiry. Returns when to look again.
   */
  private async redrive(): Promise<number | null> {
    const redrive = workToRedrive(this.folded, {
      nowMs: this.effects.now(),
      progressAtMs: Math.max(this.folded.lastFoldedAtMs, this.observedProgressAtMs),
      redrivesSinceProgress: this.redrivesSinceProgress,
      ...(this.redriveAfterMs === undefined ? {} : { afterMs: this.redriveAfterMs }),
    });
    if (redrive.requestOffset === null && redrive.scripts.length === 0) return redrive.checkAtMs;
    this.logger.warn({ streamPath: this.streamPath, requestOffset: redrive.requestOffset, scripts: redrive.scripts.map((s) => s.executionId), redrives: this.redrivesSinceProgress + 1 }, "outstanding work made no progress; issuing it again");
    if (redrive.requestOffset !== null) await this.publishLlmWork(redrive.requestOffset, true);
    for (const script of redrive.scripts) await this.publishScriptWork(script.requestedOffset, script.executionId, true);
    this.redrivesSinceProgress += 1;
    return redrive.checkAtMs;
  }
}

/** A decision that is exactly one new request: its offset is known before the append commits. */
function handsOffRequest(batch: readonly EventInput[]): boolean {
  return batch.length === 1 && batch[0]?.type === "agent/llm-request-requested";
}
