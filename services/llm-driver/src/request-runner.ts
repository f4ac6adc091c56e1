// Runs one requested turn: re-reads the stream (the work item is only a hint), renders the
// prompt through R, streams the model's answer onto the live lane, and settles with one keyed
// batch. Stops without committing anything when someone else settles R first or an
// interrupt takes the request; settles failed on errors, the idle watchdog or the deadline.

import type { Tracer } from "@opentelemetry/api";
import { inSpan, type Leave, retryTransient, triggerOffsetOfRequestKey, turnContext } from "@agentrt/service-kit";
import type { AgentState } from "@agentrt/agent-core";
import { type AgentEvent, ContractViolationError, type EventInput, mendIllFormedText } from "@agentrt/contract";
import type { Logger } from "@agentrt/service-kit";
import type { EventStore } from "@agentrt/streams";
import { ChunkCoalescer } from "./chunk-coalescer.ts";
import { ChunkPublisher } from "./chunk-publisher.ts";
import { armRunTimers, type FollowStream, watchForSettlement } from "./run-guards.ts";
import { COMPACTION_INSTRUCTION, compactionCanShrink, compactionCheck, compactionItem, promptSize } from "./compaction.ts";
import { ModelCallError, ModelIdleError, ModelReplyTooLargeError, RequestDeadlineError } from "./errors.ts";
import type { DriverMetrics } from "./metrics.ts";
import type { ModelCall, ModelClient, RenderedMessage } from "./model-client.ts";
import { routeModel, type ModelRoute, type ProvidersConfig } from "./providers.ts";
import { RequestFolds } from "./request-folds.ts";
import { RequestStop, type RunningRequest, RunningRequests } from "./running-requests.ts";
import { failureBatch, keptRawUsage, MAX_REPLY_BYTES, successBatch } from "./settlement.ts";
import { normaliseUsage, type ContextWindowTable, type NormalisedUsage } from "./usage.ts";

export interface DriverSettings {
  /** No progress for this long abandons the attempt (contract: 45 s). */
  readonly idleTimeoutMs: number;
  readonly contextWindows: ContextWindowTable;
  readonly chunkWindowMs?: number;
  readonly chunkMaxBytes?: number;
}

export interface RequestRunnerDeps {
  readonly store: EventStore;
  /** Picks the client for a route (null route: the offline model). */
  readonly modelFor: (route: ModelRoute | null) => ModelClient;
  readonly providers: ProvidersConfig;
  readonly logger: Logger;
  readonly metrics: DriverMetrics;
  readonly running: RunningRequests;
  readonly settings: DriverSettings;
  readonly nowMs: () => number;
  /** Traces each driven request as a span of its turn (see service-kit's turnContext). */
  readonly tracer?: Tracer;
  /** Reads the stream at least through R (default: a full read from the store). */
  readonly readStream?: (streamPath: string, requestOffset: number) => Promise<readonly AgentEvent[]>;
  /** Follows a stream's new events for the settlement watch (default: a store subscription per turn). */
  readonly followStream?: FollowStream;
  /** Streams whose last folded request is kept, so the next one folds and renders only new events (default 2 000). */
  readonly maxFoldedStreams?: number;
  /**
   * A slot for an open request's model call, by its agent and the model it names (the driver's
   * fair share): resolves with the function that gives it back once the call may start, or with
   * undefined when the driver stops first; undefined at once when the agent's group already has
   * its fill waiting (the run ends "busy" and its item comes back later). Default: no bound here.
   */
  readonly slot?: (streamPath: string, model: string) => Promise<Leave | undefined> | undefined;
  /** Longest a request waits for its slot (default MAX_SLOT_WAIT_MS). */
  readonly maxSlotWaitMs?: number;
}

/**
 * Longest a request waits for a driver slot before its item goes back to the queue (busy): well
 * inside the reducer's first redrive (30 s of quiet), so a request waiting here is not also
 * driven by another driver that took the redriven item (review: one waiting without bound would
 * call the model after the other did).
 */
export const MAX_SLOT_WAIT_MS = 10_000;

export type RunOutcome =
  | "succeeded"
  | "failed"
  /** Another incarnation committed first (settled this request): ours committed nothing. */
  | "lost-race"
  | "interrupted"
  | "settled-elsewhere"
  | "already-settled"
  | "not-open"
  | "not-visible"
  | "expired"
  | "shutdown"
  /** No slot: the request's group already has its fill of calls waiting in this driver. */
  | "busy";

/** What a settlement needs of its run: where, for whom, and the shutdown that ends its retries. */
interface SettleContext {
  readonly streamPath: string;
  readonly requestOffset: number;
  readonly log: Logger;
  readonly shutdown: AbortSignal | undefined;
}

/** An open request as read from its stream. */
interface OpenRead {
  readonly state: AgentState;
  readonly open: NonNullable<AgentState["openRequest"]>;
  readonly events: readonly AgentEvent[];
  readonly readMs: number;
}

interface Attempt {
  text: string;
  /** UTF-8 bytes of `text` (bounded by MAX_REPLY_BYTES). */
  bytes: number;
  usage: NormalisedUsage | null;
  rawUsage: Record<string, unknown> | undefined;
  /** Why the answer ended, when the provider said. */
  finishReason?: string;
}

export class RequestRunner {
  private readonly folds: RequestFolds;
  /** The run of each request this process is handling (from its start), by stream and offset. */
  private readonly handling = new Map<string, Promise<RunOutcome>>();

  constructor(private readonly deps: RequestRunnerDeps) {
    this.folds = new RequestFolds(deps.maxFoldedStreams ?? 2_000);
  }

  /**
   * Drives the request, once per process at a time. A redelivery of an item this process is
   * still handling waits for that run and then decides again from the stream: the run may have
   * ended without settling (its own delivery, no longer the live one, was naked for nothing), and
   * acking this one unseen would leave the request undriven until it expires (chaos soak). From
   * the start, not only once the model call is under way: deliveries that arrived together (the
   * reducer's redrives of a request waiting in a busy driver) had each read the stream and called
   * the model, four calls for one request (red-team).
   */
  async run(streamPath: string, requestOffset: number, shutdown?: AbortSignal): Promise<RunOutcome> {
    const key = `${streamPath}\u0000${requestOffset}`;
    for (let earlier = this.handling.get(key); earlier !== undefined; earlier = this.handling.get(key)) await earlier.catch(() => undefined);
    const handled = this.runOnce(streamPath, requestOffset, shutdown);
    this.handling.set(key, handled);
    try {
      return await handled;
    } finally {
      if (this.handling.get(key) === handled) this.handling.delete(key);
    }
  }

  private async runOnce(streamPath: string, requestOffset: number, shutdown?: AbortSignal): Promise<RunOutcome> {
    for (let existing = this.deps.running.get(streamPath, requestOffset); existing !== undefined; existing = this.deps.running.get(streamPath, requestOffset)) {
      await existing.done;
    }
    const log = this.deps.logger.child({ streamPath, requestOffset });
    const read = await this.readOpen(streamPath, requestOffset, log);
    if (typeof read === "string") return read;
    if (this.deps.slot === undefined) return this.driveRead(streamPath, requestOffset, read, log, shutdown);
    const entering = this.deps.slot(streamPath, read.open.model);
    if (entering === undefined) {
      log.info({ model: read.open.model }, "no driver slot: this agent's group has its fill of calls waiting here; the work item comes back later");
      return "busy";
    }
    // Granted at once, the promise is already resolved: its callback runs before this one tick ends.
    let grantedAtOnce = false;
    void entering.then(() => (grantedAtOnce = true));
    await Promise.resolve();
    const waited = !grantedAtOnce;
    const leave = waited ? await this.slotWithin(streamPath, requestOffset, entering, this.deps.maxSlotWaitMs ?? MAX_SLOT_WAIT_MS) : await entering;
    if (leave === "timed out") {
      log.info({ model: read.open.model }, "no driver slot within the wait bound; the work item goes back to the queue");
      return "busy";
    }
    if (leave instanceof RequestStop) {
      log.info({ model: read.open.model, stop: leave.kind }, "stopped while waiting for a driver slot; the model was not called");
      return leave.kind === "interrupted" ? "interrupted" : "shutdown";
    }
    if (leave === undefined) return "shutdown";
    try {
      // Waited for the slot: the request may have been settled, interrupted or expired since.
      const current = waited ? await this.readOpen(streamPath, requestOffset, log) : read;
      if (typeof current === "string") return current;
      return await this.driveRead(streamPath, requestOffset, current, log, shutdown);
    } finally {
      leave();
    }
  }

  /**
   * The slot once granted, "timed out", or the stop that came first (a slot granted later is
   * given back at once). While it waits the request is in the running table with no text, so an
   * interrupt finds it and is answered at once: unanswered, the reducer waited out its interrupt
   * timeout before the user's next message was taken up.
   */
  private async slotWithin(streamPath: string, requestOffset: number, entering: Promise<Leave | undefined>, ms: number): Promise<Leave | undefined | "timed out" | RequestStop> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timed out">((resolve) => (timer = setTimeout(() => resolve("timed out"), ms)));
    let stopWaiting!: (stop: RequestStop) => void;
    const stopped = new Promise<RequestStop>((resolve) => (stopWaiting = resolve));
    let finish!: () => void;
    const waiting: RunningRequest = { partialText: () => "", stop: stopWaiting, done: new Promise<void>((resolve) => (finish = resolve)), waitingForSlot: true };
    this.deps.running.add(streamPath, requestOffset, waiting);
    try {
      const first = await Promise.race([entering, timedOut, stopped]);
      if (first === "timed out" || first instanceof RequestStop) void entering.then((leave) => leave?.());
      return first;
    } finally {
      clearTimeout(timer);
      this.deps.running.delete(streamPath, requestOffset, waiting);
      finish();
    }
  }

  /** Reads the stream through R and decides whether R is open, or what else the run ends as. */
  private async readOpen(streamPath: string, requestOffset: number, log: Logger): Promise<RunOutcome | OpenRead> {
    const readStartedAt = this.deps.nowMs();
    const events = this.deps.readStream ? await this.deps.readStream(streamPath, requestOffset) : await this.deps.store.read(streamPath);
    const readMs = this.deps.nowMs() - readStartedAt;
    const status = this.folds.status(streamPath, events, requestOffset, this.deps.nowMs());
    if (status.kind === "settled") return "already-settled";
    if (status.kind === "not-visible") {
      log.warn({ lastOffset: status.lastOffset }, "the stream read ended before the request; trying the work item again");
      return "not-visible";
    }
    if (status.kind === "not-open") {
      log.info({ reason: status.reason }, "work item does not name an open request; acking");
      return "not-open";
    }
    if (status.kind === "expired") {
      log.info({ expiresAt: status.request.expiresAt }, "request expired before it ran; the reducer expires it");
      return "expired";
    }
    return { state: status.state, open: status.request, events, readMs };
  }

  private driveRead(streamPath: string, requestOffset: number, read: OpenRead, log: Logger, shutdown: AbortSignal | undefined): Promise<RunOutcome> {
    const { state, open, events, readMs } = read;
    const lastRead = events.at(-1)?.offset ?? requestOffset;
    log.info({ model: open.model, events: events.length, readMs }, "driving request");
    const drive = () => this.drive({ streamPath, requestOffset, state, lastRead, log, shutdown });
    // The request's key names the trigger it answers, which names the turn's trace.
    const trigger = triggerOffsetOfRequestKey(events.find((e) => e.offset === requestOffset)?.idempotencyKey);
    if (this.deps.tracer === undefined || trigger === undefined) return drive();
    return inSpan(this.deps.tracer, "llm.request", turnContext(streamPath, trigger), { "agentrt.stream_path": streamPath, "agentrt.request_offset": requestOffset, "agentrt.model": open.model }, async (span) => {
      const outcome = await drive();
      span.setAttribute("agentrt.outcome", outcome);
      return outcome;
    });
  }

  private async drive(ctx: {
    streamPath: string;
    requestOffset: number;
    state: AgentState;
    lastRead: number;
    log: Logger;
    shutdown: AbortSignal | undefined;
  }): Promise<RunOutcome> {
    const { streamPath, requestOffset: R, state, log } = ctx;
    const { store, metrics, nowMs, settings } = this.deps;
    const open = state.openRequest as NonNullable<AgentState["openRequest"]>;
    const controller = new AbortController();
    const stop = (s: RequestStop): void => {
      if (!controller.signal.aborted) controller.abort(s);
    };
    const attempt: Attempt = { text: "", bytes: 0, usage: null, rawUsage: undefined };
    let finish!: () => void;
    const running: RunningRequest = { partialText: () => attempt.text, stop, done: new Promise<void>((r) => (finish = r)) };
    this.deps.running.add(streamPath, R, running);
    const startedAt = nowMs();
    metrics.turnStarted();
    const timers = armRunTimers({ expiresAt: open.expiresAt, idleTimeoutMs: settings.idleTimeoutMs, nowMs, stop, shutdown: ctx.shutdown });
    const watcher = watchForSettlement(store, streamPath, R, ctx.lastRead + 1, stop, log, this.deps.followStream);
    let outcome: RunOutcome = "failed";
    try {
      let messages: RenderedMessage[];
      let route: ModelRoute | null;
      try {
        messages = this.folds.render(streamPath, state);
        route = Object.keys(this.deps.providers).length === 0 ? null : routeModel(open.model, this.deps.providers);
      } catch (error) {
        outcome = await this.settleFailed(ctx, state, startedAt, error);
        return outcome;
      }
      const coalescer = new ChunkCoalescer({ startedAtMs: startedAt, windowMs: settings.chunkWindowMs, maxBytes: settings.chunkMaxBytes });
      const publisher = new ChunkPublisher(store, streamPath, R, metrics, log, watcher.lastSeenOffset);
      let flushTimer: NodeJS.Timeout | undefined;
      const armFlush = (): void => {
        const due = coalescer.nextDueAtMs();
        if (due === null || flushTimer !== undefined) return;
        flushTimer = setTimeout(() => {
          flushTimer = undefined;
          const flush = coalescer.tick(nowMs());
          if (flush) publisher.publish(flush);
          armFlush();
        }, Math.max(0, due - nowMs()));
      };
      try {
        const call: ModelCall = {
          route,
          model: open.model,
          messages,
          promptCacheKey: streamPath,
          interpretResponses: state.config.interpretResponses,
          purpose: "turn",
          signal: controller.signal,
        };
        let first = true;
        for await (const event of this.deps.modelFor(route).stream(call)) {
          // Model output is progress; an empty chunk or a usage report is not.
          if (event.kind === "chunk" && event.empty !== true) timers.progress();
          if (event.kind === "chunk" && event.finishReason !== undefined) attempt.finishReason = event.finishReason;
          if (event.kind === "usage") {
            attempt.rawUsage = keptRawUsage(event.raw);
            attempt.usage = normaliseUsage(event.raw);
            continue;
          }
          if (first) {
            first = false;
            metrics.firstToken((nowMs() - startedAt) / 1000);
          }
          // Bounded as it streams: past what a settlement stores, the reply can never be kept,
          // and holding it grew the driver by a gigabyte for a 300 MB reply.
          attempt.bytes += Buffer.byteLength(event.text);
          if (attempt.bytes > MAX_REPLY_BYTES) throw new ModelReplyTooLargeError(MAX_REPLY_BYTES);
          attempt.text += event.text;
          for (const flush of coalescer.push(event.raw, nowMs())) publisher.publish(flush);
          armFlush();
        }
      } catch (error) {
        if (flushTimer) clearTimeout(flushTimer);
        const reason: unknown = controller.signal.aborted ? controller.signal.reason : error;
        outcome = await this.afterError(ctx, state, startedAt, reason, coalescer, publisher);
        return outcome;
      }
      if (flushTimer) clearTimeout(flushTimer);
      const last = coalescer.finish(nowMs());
      if (last) publisher.publish(last);
      await publisher.drained();
      if (controller.signal.aborted) {
        outcome = await this.afterError(ctx, state, startedAt, controller.signal.reason, coalescer, publisher);
        return outcome;
      }
      outcome = await this.settleSucceeded(ctx, state, route, startedAt, attempt, messages);
      return outcome;
    } finally {
      timers.clear();
      watcher.close();
      this.deps.running.delete(streamPath, R, running);
      metrics.turnFinished(outcome, (nowMs() - startedAt) / 1000);
      finish();
    }
  }

  /** An error or a stop: decide whether to commit a failure or stand down silently. */
  private async afterError(
    ctx: SettleContext,
    state: AgentState,
    startedAt: number,
    reason: unknown,
    coalescer: ChunkCoalescer,
    publisher: ChunkPublisher,
  ): Promise<RunOutcome> {
    if (reason instanceof RequestStop && (reason.kind === "interrupted" || reason.kind === "settled-elsewhere" || reason.kind === "shutdown")) {
      ctx.log.info({ stop: reason.kind }, "model call stopped; committing nothing");
      return reason.kind;
    }
    // Chunks streamed before the failure still reach live viewers, in order.
    const last = coalescer.finish(this.deps.nowMs());
    if (last) publisher.publish(last);
    await publisher.drained();
    const error =
      reason instanceof RequestStop && reason.kind === "idle"
        ? new ModelIdleError(this.deps.settings.idleTimeoutMs)
        : reason instanceof RequestStop && reason.kind === "deadline"
          ? new RequestDeadlineError((state.openRequest as NonNullable<AgentState["openRequest"]>).expiresAt)
          : reason;
    return this.settleFailed(ctx, state, startedAt, error);
  }

  private async settleFailed(
    ctx: SettleContext,
    state: AgentState,
    startedAt: number,
    error: unknown,
  ): Promise<RunOutcome> {
    const errorMessage = error instanceof Error ? error.message : String(error);
    const policy = state.config.llmRequestRetryPolicy;
    const batch = failureBatch({
      requestOffset: ctx.requestOffset,
      errorMessage,
      durationMs: this.deps.nowMs() - startedAt,
      attempt: state.consecutiveLlmFailures + 1,
      maxAttempts: policy.maxAttempts,
    });
    const result = await this.appendSettlement(ctx, batch);
    if (result.status === "duplicate") {
      ctx.log.info("another driver settled this request first (lost race); our failure committed nothing");
      return "lost-race";
    }
    ctx.log.warn({ err: error instanceof ModelCallError ? error.message : error }, "model call failed; settled failed");
    return "failed";
  }

  private async settleSucceeded(
    ctx: SettleContext,
    state: AgentState,
    route: ModelRoute | null,
    startedAt: number,
    attempt: Attempt,
    messages: RenderedMessage[],
  ): Promise<RunOutcome> {
    const open = state.openRequest as NonNullable<AgentState["openRequest"]>;
    const batch = successBatch({
      requestOffset: ctx.requestOffset,
      model: open.model,
      text: attempt.text,
      durationMs: this.deps.nowMs() - startedAt,
      usage: attempt.usage,
      rawUsage: attempt.rawUsage,
      contextWindows: this.deps.settings.contextWindows,
      ...(attempt.finishReason === undefined ? {} : { finishReason: attempt.finishReason }),
    });
    let result: Awaited<ReturnType<RequestRunner["appendSettlement"]>>;
    try {
      result = await this.appendSettlement(ctx, batch);
    } catch (error) {
      // A batch the store refuses (a reply whose JSON escapes took it past the batch's bound)
      // is settled failed, saying why: thrown, the request stayed open until it expired.
      if (!(error instanceof ContractViolationError)) throw error;
      return this.settleFailed(ctx, state, startedAt, new ModelCallError(`the model's reply could not be stored: ${error.message}`, { cause: error }));
    }
    if (result.status === "duplicate") {
      ctx.log.info("another driver settled this request first (lost race); our answer committed nothing");
      return "lost-race";
    }
    ctx.log.info({ chars: attempt.text.length, usage: attempt.usage }, "request settled: succeeded");
    const report = result.events.find((e) => e.type === "agent/token-usage-reported");
    if (report?.type === "agent/token-usage-reported") {
      await this.maybeCompact(ctx, state, route, report, messages).catch((error: unknown) =>
        ctx.log.error({ err: error }, "compaction failed; history stays as it is"),
      );
    }
    return "succeeded";
  }

  /**
   * Retried here across a NATS blip: thrown back to the queue, a settlement (an answer the model
   * already gave) waited for a redelivery up to 30 s after NATS was back and then asked the
   * model again (chaos soak). The keys make a retry of a batch that did land answer `duplicate`.
   * The model's text is mended to well-formed Unicode first: a provider's `\ud800` escape is no
   * input of ours to refuse, and refused, the answer could never be stored.
   */
  private appendSettlement(ctx: SettleContext, batch: EventInput[]): ReturnType<EventStore["append"]> {
    const mended = mendIllFormedText(batch);
    return retryTransient(() => this.deps.store.append(ctx.streamPath, mended), {
      signal: ctx.shutdown,
      onRetry: (error, attempt, delayMs) => ctx.log.warn({ err: error, attempt, retryInMs: delayMs }, "settlement append failed transiently; retrying"),
    });
  }

  private async maybeCompact(
    ctx: SettleContext,
    state: AgentState,
    route: ModelRoute | null,
    report: Extract<AgentEvent, { type: "agent/token-usage-reported" }>,
    messages: RenderedMessage[],
  ): Promise<void> {
    const check = compactionCheck(report.payload, state.config.compactionTriggerFraction, promptSize(messages));
    // A driver already stopping asks for no summary (a later turn asks again).
    if (!check.due || ctx.shutdown?.aborted === true) return;
    if (!compactionCanShrink(state.contextItems)) {
      ctx.log.warn(check, "usage crossed the compaction threshold, but this context is mostly keyed sections and system messages, which a compaction keeps; not asking for a summary");
      return;
    }
    ctx.log.info(check, "usage crossed the compaction threshold; asking the model for a summary");
    const controller = new AbortController();
    const deadlineMs = this.deps.settings.idleTimeoutMs * 4;
    const timer = setTimeout(() => controller.abort(new ModelCallError(`the compaction summary took longer than ${Math.round(deadlineMs / 1000)} s`)), deadlineMs);
    // A driver stopping does not wait for a summary: the compaction is asked for again after a later turn.
    const stop = () => controller.abort(ctx.shutdown?.reason);
    ctx.shutdown?.addEventListener("abort", stop, { once: true });
    let summary = "";
    let bytes = 0;
    try {
      const call: ModelCall = {
        route,
        model: report.payload.model,
        messages: [...messages, { role: "user", content: COMPACTION_INSTRUCTION }],
        promptCacheKey: ctx.streamPath,
        interpretResponses: state.config.interpretResponses,
        purpose: "compaction",
        signal: controller.signal,
      };
      for await (const event of this.deps.modelFor(route).stream(call)) {
        if (event.kind !== "chunk") continue;
        // Bounded as a reply is: a summary past it could not be stored, and holding it grows the driver.
        bytes += Buffer.byteLength(event.text);
        if (bytes > MAX_REPLY_BYTES) throw new ModelReplyTooLargeError(MAX_REPLY_BYTES);
        summary += event.text;
      }
    } finally {
      clearTimeout(timer);
      ctx.shutdown?.removeEventListener("abort", stop);
    }
    // An empty summary would replace the whole history with nothing (red-team): history stays as it is.
    if (summary.trim() === "") {
      ctx.log.warn({ model: report.payload.model }, "the model's compaction summary was empty; history stays as it is");
      return;
    }
    const item: EventInput = compactionItem(report.payload, report.offset, check, summary.trim());
    await this.deps.store.append(ctx.streamPath, [mendIllFormedText(item)]);
  }
}
