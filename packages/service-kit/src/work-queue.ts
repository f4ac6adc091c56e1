// Work queues on JetStream: the reducer hands LLM requests and script runs to drivers and
// hosts through one work-queue stream per kind (AGENT_WORK_LLM, AGENT_WORK_SCRIPT). An item is
// only a hint: the event stream is the truth, so consumers re-read it and a duplicate or stale
// item is simply acked.
//
// One stream per kind, each with a single unfiltered durable consumer, rather than one stream
// with a filtered consumer per kind: the chaos soak saw nats-server 2.9 deliver one kind's items
// to the other kind's filtered consumer after node restarts, and on a work-queue stream an item
// held by the wrong consumer never reached its own (three agents' scripts went round the
// drivers' consumer, put back every minute, for the rest of a 15-minute run). With nothing to
// filter, no consumer can be handed an item that is not its own.
//
// Claims are durable pull consumers with explicit acks. A worker heartbeats `working()` while
// busy; a worker that dies stops heartbeating, its item is redelivered after `ackWaitMs` and
// another incarnation takes over. With `claims` (work-claims.ts), a worker that dies is found
// by presence and its item handed back within a probe round; the ack wait is then only the
// backstop for a worker that froze or was cut off.

import {
  AckPolicy,
  DeliverPolicy,
  type ConsumerConfig,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import type { Logger } from "pino";
import { isRetryable } from "@agentrt/contract";
import { createShared, JetStreamPublisher } from "@agentrt/streams/jetstream";
import type { WorkClaims } from "./work-claims.ts";
import { parseJsonOrUndefined } from "./json.ts";
import { isTransientFailure, untilNatsAnswers } from "./transient-retry.ts";

/** Each kind's work-queue stream (subjects `work.<kind>.>`). */
export const WORK_STREAMS = { llm: "AGENT_WORK_LLM", script: "AGENT_WORK_SCRIPT" } as const;

/**
 * The one stream of earlier versions (subjects `work.>`, a filtered consumer per kind). Its
 * subjects overlap the per-kind streams', so it is removed when they are first created; the
 * items in it are hints, which the reducer issues again for every outstanding request and
 * script (its redrive).
 */
export const LEGACY_WORK_STREAM = "AGENT_WORK";

export function workStreamName(kind: WorkKind): string {
  return WORK_STREAMS[kind];
}

export const llmWorkItemSchema = z.strictObject({ streamPath: z.string(), requestOffset: z.number().int().positive() });
export const scriptWorkItemSchema = z.strictObject({
  streamPath: z.string(),
  requestedOffset: z.number().int().positive(),
  executionId: z.string().min(1),
});

export type LlmWorkItem = z.infer<typeof llmWorkItemSchema>;
export type ScriptWorkItem = z.infer<typeof scriptWorkItemSchema>;

export type WorkKind = "llm" | "script";

const itemSchemas = { llm: llmWorkItemSchema, script: scriptWorkItemSchema } as const;
export type WorkItemOf<K extends WorkKind> = K extends "llm" ? LlmWorkItem : ScriptWorkItem;

export function workSubject(kind: WorkKind, partition: number): string {
  return `work.${kind}.${partition}`;
}

export function workMessageId(kind: WorkKind, item: LlmWorkItem | ScriptWorkItem): string {
  return kind === "llm"
    ? `llm:${item.streamPath}@${(item as LlmWorkItem).requestOffset}`
    : `script:${item.streamPath}@${(item as ScriptWorkItem).executionId}`;
}

/**
 * Creates `kind`'s work-queue stream when missing (idempotent; replicas race safely). Where the
 * single stream of an earlier version still holds `work.>`, it is removed first (see
 * LEGACY_WORK_STREAM): nats-server refuses a stream whose subjects overlap another's.
 */
export async function ensureWorkStream(jsm: JetStreamManager, kind: WorkKind, options: { replicas?: number; logger?: Logger } = {}): Promise<void> {
  const name = workStreamName(kind);
  const config = {
    name,
    subjects: [`work.${kind}.>`],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: options.replicas ?? 1,
    duplicate_window: nanos(120_000),
  };
  if (await streamExists(jsm, name)) return;
  await removeLegacyWorkStream(jsm, options.logger);
  // Every replica of the reducer and of this kind's workers creates it when missing.
  await createShared(async () => {
    if (!(await streamExists(jsm, name))) await jsm.streams.add(config);
  });
}

/** Every kind's work-queue stream (the reducer publishes both kinds). */
export async function ensureWorkStreams(jsm: JetStreamManager, options: { replicas?: number; logger?: Logger } = {}): Promise<void> {
  for (const kind of ["llm", "script"] as const) await ensureWorkStream(jsm, kind, options);
}

async function removeLegacyWorkStream(jsm: JetStreamManager, logger: Logger | undefined): Promise<void> {
  const legacy = await jsm.streams.info(LEGACY_WORK_STREAM).catch((error: unknown) => {
    if (isStreamNotFound(error)) return undefined;
    throw error;
  });
  if (legacy === undefined) return;
  logger?.warn(
    { stream: LEGACY_WORK_STREAM, items: legacy.state.messages },
    "removing the single work stream of an earlier version; its items are issued again by the reducer's redrive",
  );
  await jsm.streams.delete(LEGACY_WORK_STREAM).catch((error: unknown) => {
    // Another replica removed it first.
    if (!isStreamNotFound(error)) throw error;
  });
}

async function streamExists(jsm: JetStreamManager, name: string): Promise<boolean> {
  try {
    await jsm.streams.info(name);
    return true;
  } catch (error) {
    if (isStreamNotFound(error)) return false;
    throw error;
  }
}

/** The server's "stream not found", as the event store's setup reads it (streams stream-setup.ts). */
function isStreamNotFound(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound;
}

const encoder = new TextEncoder();

/**
 * Hands a work item to the queue. Given a `JetStreamPublisher` (the reducer passes one of its own),
 * the item goes out as a plain publish acknowledged on that publisher's inbox, without the
 * per-request timer and `Error` of `js.publish`: the reducer publishes one per turn.
 */
export async function publishWork<K extends WorkKind>(
  publisher: JetStreamClient | JetStreamPublisher,
  kind: K,
  partition: number,
  item: WorkItemOf<K>,
  options: { redrive?: boolean } = {},
): Promise<void> {
  // A re-drive (adoption of an abandoned request) must not be swallowed by the dedup window.
  const msgID = options.redrive ? `${workMessageId(kind, item)}#${Date.now()}` : workMessageId(kind, item);
  const body = JSON.stringify(item);
  if (publisher instanceof JetStreamPublisher) await publisher.publish(workSubject(kind, partition), encoder.encode(body), { msgID });
  else await publisher.publish(workSubject(kind, partition), body, { msgID });
}

/** What a handler tells the queue: done, try again later, or never again. */
export type WorkOutcome = { readonly type: "ack" } | { readonly type: "retry"; readonly delayMs: number } | { readonly type: "drop" };

/** The backoff of a retried failure: 1 s, 2 s, 4 s … capped at 30 s. */
export function retryBackoffMs(deliveryCount: number): number {
  return Math.min(30_000, 500 * 2 ** Math.min(Math.max(1, deliveryCount), 6));
}

/**
 * The backoff after NATS itself failed (`isTransientFailure`): as above but capped at 5 s. Such
 * an outage ends with a node's restart or a leader election, seconds; the delivery count also
 * counts every polite "later" an item got before (a script waiting for a live host's run), so
 * the 30 s cap could keep a turn waiting half a minute after the cluster answered again
 * (chaos soak, issue 16).
 */
export function transientRetryBackoffMs(deliveryCount: number): number {
  return Math.min(5_000, retryBackoffMs(deliveryCount));
}

/**
 * What the queue does with a handler that threw: the one place errors become broker actions.
 * A terminal error (an `AgentRuntimeError` that says retrying cannot help) is terminated so it
 * is never redelivered; anything else is naked with a backoff that grows per delivery.
 */
export function workOutcomeOfError(error: unknown, deliveryCount: number): Exclude<WorkOutcome, { type: "ack" }> {
  if (!isRetryable(error)) return { type: "drop" };
  return { type: "retry", delayMs: isTransientFailure(error) ? transientRetryBackoffMs(deliveryCount) : retryBackoffMs(deliveryCount) };
}

export interface WorkContext {
  /** How many times this item has been delivered (1 on the first attempt). */
  readonly deliveryCount: number;
  /** Aborted when the consumer stops (not when it only stops taking work). */
  readonly signal: AbortSignal;
}

export interface ConsumeWorkOptions<K extends WorkKind> {
  readonly kind: K;
  readonly durable: string;
  readonly handler: (item: WorkItemOf<K>, context: WorkContext) => Promise<WorkOutcome>;
  readonly logger: Logger;
  readonly concurrency?: number;
  readonly ackWaitMs?: number;
  readonly heartbeatMs?: number;
  readonly maxDeliver?: number;
  /** Makes each claim discoverable, so survivors hand a dead worker's items back at once. */
  readonly claims?: WorkClaims;
  /** What the handler is doing with an item (logged with a handler that runs long). */
  readonly describe?: (item: WorkItemOf<K>) => Record<string, unknown>;
  /** A handler running this long is logged, and again each time this passes (default SLOW_HANDLER_LOG_MS). */
  readonly slowHandlerLogMs?: number;
  /** How often the worker compares its consumer with its stream (default WORK_RECONCILE_MS; 0 turns it off). */
  readonly reconcileMs?: number;
}

export interface WorkConsumer {
  /** Claiming work: not stopped, and the last fetch from the consumer succeeded (readiness). */
  running(): boolean;
  /**
   * Takes no more items (one fetched meanwhile goes back at once) and resolves when the fetch
   * loop has ended; the items being handled go on, heartbeating, their signal not aborted: a
   * worker that drains lets them finish.
   */
  stopTaking(): Promise<void>;
  /** Stops taking items, aborts the signal of those being handled and waits for them. */
  stop(): Promise<void>;
}

/**
 * Deliveries of a work item whose request (an LLM request, a script's) the stream read never
 * reached, after which the worker drops it. A lagging read catches up in far less; an item naming
 * an offset past the stream's end (only the reducer's user may publish one) was tried again every
 * half second forever, reading the whole stream each time (red-team). A request that is real and
 * still open is issued again by the reducer.
 */
export const MAX_NOT_VISIBLE_DELIVERIES = 60;

/**
 * What a worker tells the queue of an item whose request its stream read has not reached: try it
 * again in half a second, or drop it once it has been delivered `max` times.
 */
export function notVisibleOutcome(deliveryCount: number, max: number = MAX_NOT_VISIBLE_DELIVERIES): WorkOutcome {
  return deliveryCount >= max ? { type: "drop" } : { type: "retry", delayMs: 500 };
}

/** A handler running this long is logged (and again each time this passes). */
export const SLOW_HANDLER_LOG_MS = 60_000;

/**
 * How often a worker compares its durable consumer's positions with its work stream (see
 * `strandedWork`). A consumer found stranding items on two checks in a row is recreated, so the
 * longest an item stays stranded is about two of these.
 */
export const WORK_RECONCILE_MS = 10_000;

/** A worker recreates its consumer at most once in this many checks. */
const RECREATE_EVERY_CHECKS = 6;

/** What `strandedWork` reads of a work stream (its `streams.info` state). */
export interface WorkStreamPositions {
  readonly messages: number;
  readonly firstSeq: number;
  readonly lastSeq: number;
}

/** What `strandedWork` reads of the stream's durable consumer (its `consumers.info`). */
export interface WorkConsumerPositions {
  readonly deliveredStreamSeq: number;
  readonly ackFloorStreamSeq: number;
  readonly numPending: number;
  readonly numAckPending: number;
}

/** A fault `strandedWork` found: which one, and a sentence saying why items are stranded. */
export interface StrandedWork {
  /** Delivered past the stream's last sequence; held at or below the ack floor; held with nothing to deliver or out. */
  readonly kind: "ahead-of-stream" | "below-ack-floor" | "undelivered";
  readonly reason: string;
}

/**
 * Why a work stream's durable consumer can no longer deliver what the stream holds, or
 * undefined when the two agree. On a work-queue stream an acknowledged item is deleted, so an
 * item still stored at or below the consumer's acknowledgement floor, or a stream holding items
 * while the consumer has none left to deliver and none awaiting an ack, is an item no worker
 * will ever get; a consumer that has delivered past the stream's last sequence would skip the
 * next items published. The chaos soak saw nats-server 2.9's replicated (R3) consumer end up
 * like this across leader changes (246 and 423 items held, none delivered, issue 16). Pure.
 */
export function strandedWork(stream: WorkStreamPositions, consumer: WorkConsumerPositions): StrandedWork | undefined {
  if (consumer.deliveredStreamSeq > stream.lastSeq) {
    return {
      kind: "ahead-of-stream",
      reason: `the consumer has delivered up to stream sequence ${consumer.deliveredStreamSeq} but the stream ends at ${stream.lastSeq}, so the next items would be skipped`,
    };
  }
  if (stream.messages === 0) return undefined;
  if (stream.firstSeq <= consumer.ackFloorStreamSeq) {
    return {
      kind: "below-ack-floor",
      reason: `the stream holds ${stream.messages} items from sequence ${stream.firstSeq}, at or below the consumer's acknowledgement floor ${consumer.ackFloorStreamSeq}, so they are never delivered`,
    };
  }
  if (consumer.numPending === 0 && consumer.numAckPending === 0) {
    return { kind: "undelivered", reason: `the stream holds ${stream.messages} items but the consumer has none to deliver and none awaiting an acknowledgement` };
  }
  return undefined;
}

/** How many items a worker remembers the deliveries of (see DeliveryAttempts). */
const REMEMBERED_ITEMS = 10_000;

/**
 * The delivery count a handler is given: the server's, or one more than this worker saw last
 * for the same item, whichever is higher. nats-server 2.9 (Debian's 2.9.10; fixed upstream in
 * 2024 by nats-io/nats-server#5305 and #5338) re-sends an item whose delayed redelivery found no
 * pull waiting as if it had never been delivered, with a delivery count of 1 again, so a retried
 * item's backoff started over (seen in the nak-backoff test: deliveries counted 1, 2, 1).
 * Remembered per stream sequence until the item is acknowledged or dropped, for at most
 * REMEMBERED_ITEMS items (the oldest forgotten).
 */
export class DeliveryAttempts {
  private readonly seen = new Map<number, number>();

  delivered(streamSequence: number, serverCount: number): number {
    const count = Math.max(serverCount, (this.seen.get(streamSequence) ?? 0) + 1);
    this.seen.delete(streamSequence);
    this.seen.set(streamSequence, count);
    if (this.seen.size > REMEMBERED_ITEMS) this.seen.delete(this.seen.keys().next().value as number);
    return count;
  }

  done(streamSequence: number): void {
    this.seen.delete(streamSequence);
  }
}

/** How long an item of another kind, delivered to a consumer by mistake, is put back for. */
export const FOREIGN_ITEM_RETRY_MS = 60_000;

export type DeliveredWork<K extends WorkKind> =
  | { readonly type: "item"; readonly item: WorkItemOf<K> }
  /** Not on this kind's subjects: another kind's item. */
  | { readonly type: "foreign" }
  | { readonly type: "malformed" };

/**
 * What a delivered message is to a consumer of `kind`. Each kind has its own stream now, so
 * another kind's item cannot arrive; when both kinds shared one stream with a filtered consumer
 * each, the chaos soak saw nats-server 2.9 deliver the other kind's items after node restarts
 * (2 197 LLM items reached the hosts in one 10-minute run, each terminated as malformed and so
 * deleted before its driver got it). The check stays as a guard: a message is judged by its
 * subject first, its body only when the subject is ours, and another kind's is never deleted.
 */
export function classifyWorkMessage<K extends WorkKind>(kind: K, subject: string, body: string): DeliveredWork<K> {
  if (!subject.startsWith(`work.${kind}.`)) return { type: "foreign" };
  const parsed = itemSchemas[kind].safeParse(parseJsonOrUndefined(body));
  return parsed.success ? { type: "item", item: parsed.data as WorkItemOf<K> } : { type: "malformed" };
}

/** Pulls work items and runs the handler for each, at most `concurrency` at a time. */
export async function consumeWork<K extends WorkKind>(
  js: JetStreamClient,
  jsm: JetStreamManager,
  options: ConsumeWorkOptions<K>,
): Promise<WorkConsumer> {
  const ackWaitMs = options.ackWaitMs ?? 30_000;
  const heartbeatMs = options.heartbeatMs ?? Math.max(250, Math.floor(ackWaitMs / 3));
  const concurrency = options.concurrency ?? 8;
  const consumerConfig = {
    durable_name: options.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(ackWaitMs),
    max_deliver: options.maxDeliver ?? -1,
    max_ack_pending: 10_000,
  };
  const stream = workStreamName(options.kind);
  // Started while NATS elects leaders (a node restarting), the consumer waits for an answer.
  await untilNatsAnswers(`work consumer ${options.durable}`, () => ensureWorkConsumer(jsm, stream, consumerConfig, options.logger), { logger: options.logger });
  const consumer = await untilNatsAnswers(`work consumer ${options.durable}`, () => js.consumers.get(stream, options.durable), { logger: options.logger });
  // Taking items ends first (stopTaking); the handlers' signal is aborted only by stop().
  const taking = new AbortController();
  const abort = new AbortController();
  const inFlight = new Set<Promise<void>>();
  let lastFetchOk = true;
  const attempts = new DeliveryAttempts();

  const handle = async (msg: JsMsg): Promise<void> => {
    const delivered = classifyWorkMessage(options.kind, msg.subject, msg.string());
    if (delivered.type === "foreign") {
      // Never acked or terminated here: on a work-queue stream that deletes the item, and its
      // own workers never get it. Put back for much later; its own worker acks it meanwhile.
      options.logger.warn({ subject: msg.subject, kind: options.kind }, "a work item of another kind was delivered to this consumer; leaving it to its own workers");
      msg.nak(FOREIGN_ITEM_RETRY_MS);
      return;
    }
    if (delivered.type === "malformed") {
      options.logger.error({ subject: msg.subject }, "dropping malformed work item");
      msg.term();
      return;
    }
    const parsed = { data: delivered.item };
    const heartbeat = setInterval(() => msg.working(), heartbeatMs);
    // A handler is bounded by what it does (reads, the model's idle watchdog, a script's
    // deadline): one still running after a minute is worth a line, repeated, saying which item
    // it holds (heartbeating, so no other worker gets it meanwhile).
    const handlingSince = Date.now();
    const slow = setInterval(
      () => options.logger.warn({ item: parsed.data, runningForMs: Date.now() - handlingSince, ...options.describe?.(parsed.data as WorkItemOf<K>) }, "a work item's handler is still running"),
      options.slowHandlerLogMs ?? SLOW_HANDLER_LOG_MS,
    );
    slow.unref();
    const claimed = options.claims?.claim(msg);
    const seq = msg.info.streamSequence;
    const deliveryCount = attempts.delivered(seq, msg.info.deliveryCount);
    try {
      const outcome = await options.handler(parsed.data as WorkItemOf<K>, {
        deliveryCount,
        signal: abort.signal,
      });
      if (outcome.type === "ack") msg.ack();
      else if (outcome.type === "retry") msg.nak(outcome.delayMs);
      else msg.term();
      if (outcome.type !== "retry") attempts.done(seq);
    } catch (error) {
      const outcome = workOutcomeOfError(error, deliveryCount);
      if (outcome.type === "drop") {
        attempts.done(seq);
        options.logger.error({ err: error, item: parsed.data }, "work handler failed terminally; dropping the item");
        // No reason on the wire: nats-server before 2.10.4 ignores a `+TERM <reason>` (the log says why).
        msg.term();
      } else {
        options.logger.error({ err: error, item: parsed.data, retryInMs: outcome.delayMs }, "work handler failed; will retry");
        msg.nak(outcome.delayMs);
      }
    } finally {
      clearInterval(heartbeat);
      clearInterval(slow);
      // Removed after the ack, nak or term (same connection, so in order): a survivor that still
      // sees the claim and naks it on a dead owner's behalf naks an item already answered, a no-op.
      if (claimed !== undefined) void claimed.then(() => options.claims?.release(msg));
    }
  };

  const reconciler = startReconciler(jsm, stream, consumerConfig, options, taking.signal);

  const stoppedTaking = new Promise<void>((resolve) => taking.signal.addEventListener("abort", () => resolve(), { once: true }));
  const loop = (async () => {
    while (!taking.signal.aborted) {
      const free = concurrency - inFlight.size;
      if (free <= 0) {
        await Promise.race([...inFlight, stoppedTaking]);
        continue;
      }
      try {
        const batch = await consumer.fetch({ max_messages: free, expires: 1_000 });
        lastFetchOk = true;
        for await (const msg of batch) {
          if (taking.signal.aborted) {
            msg.nak();
            continue;
          }
          const task = handle(msg).finally(() => inFlight.delete(task));
          inFlight.add(task);
        }
      } catch (error) {
        if (taking.signal.aborted) break;
        lastFetchOk = false;
        options.logger.warn({ err: error }, "work fetch failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  })();

  const stopTaking = async (): Promise<void> => {
    taking.abort();
    clearInterval(reconciler);
    await loop;
  };
  return {
    running: () => !taking.signal.aborted && lastFetchOk,
    stopTaking,
    async stop() {
      await stopTaking();
      abort.abort();
      await Promise.allSettled(inFlight);
    },
  };
}

/**
 * Compares the durable consumer with its stream every `reconcileMs` and recreates the consumer
 * when `strandedWork` finds the same fault on two checks in a row (a single check can catch an
 * acknowledgement the stream has not applied yet). Recreating costs little: items are hints, a
 * new consumer delivers everything the stream still holds, including items other workers are
 * handling, and a handler given an item already settled on its agent's stream just acks it.
 * Workers that pull meanwhile get "consumer not found" and retry until the consumer is back.
 */
function startReconciler<K extends WorkKind>(
  jsm: JetStreamManager,
  stream: string,
  config: Partial<ConsumerConfig> & { durable_name: string; ack_wait: number },
  options: ConsumeWorkOptions<K>,
  signal: AbortSignal,
): ReturnType<typeof setInterval> | undefined {
  const every = options.reconcileMs ?? WORK_RECONCILE_MS;
  if (every <= 0) return undefined;
  let suspect: { readonly created: string; readonly firstSeq: number } | undefined;
  let countedOnly: number | undefined;
  let lastRemedyAt = Number.NEGATIVE_INFINITY;
  /**
   * A remedy (a stepdown or a recreation) at most once a minute: items that come back after
   * every one are better left to the reducer's re-issue than redelivered with everything else
   * again and again. True (and the minute starts) when one may be taken now.
   */
  const remedyDue = (): boolean => {
    if (Date.now() - lastRemedyAt < every * RECREATE_EVERY_CHECKS) return false;
    lastRemedyAt = Date.now();
    return true;
  };
  let checking = false;
  const check = async (): Promise<void> => {
    const [streamInfo, consumerInfo] = await Promise.all([
      jsm.streams.info(stream),
      jsm.consumers.info(stream, config.durable_name).catch((error: unknown) => {
        if (isConsumerNotFound(error)) return undefined;
        throw error;
      }),
    ]);
    if (consumerInfo === undefined) {
      // Gone (a recreation that failed half-way, an operator's delete): every worker's pulls
      // fail until it is back.
      suspect = undefined;
      if (signal.aborted) return;
      options.logger.warn({ stream, durable: config.durable_name }, "the work consumer is missing; creating it again");
      await ensureWorkConsumer(jsm, stream, config, options.logger);
      return;
    }
    const positions = { messages: streamInfo.state.messages, firstSeq: streamInfo.state.first_seq, lastSeq: streamInfo.state.last_seq };
    const fault = strandedWork(positions, {
      deliveredStreamSeq: consumerInfo.delivered.stream_seq,
      ackFloorStreamSeq: consumerInfo.ack_floor.stream_seq,
      numPending: consumerInfo.num_pending,
      numAckPending: consumerInfo.num_ack_pending,
    });
    const confirmed = fault !== undefined && suspect?.created === consumerInfo.created && suspect.firstSeq === positions.firstSeq;
    suspect = confirmed || fault === undefined ? undefined : { created: consumerInfo.created, firstSeq: positions.firstSeq };
    if (!confirmed || signal.aborted) return;
    // Items the stream's leader counts but cannot load. The long soak met two forms on R3 work
    // streams after node restarts: acknowledged items deleted on the replicas but still in the
    // leader's count, and a leader whose store took new items (counted, sequenced) that it then
    // could not deliver, while another replica held every one: the llm-driver's consumer handed
    // out nothing for minutes and every turn of every agent waited, until the leader stepped down
    // and the new one delivered 251 items at once. A new consumer cannot help either; a leader
    // that holds the items can. The leader is asked to step down once for each first sequence it
    // shows (a count no replica holds stays, and is said once, not fought over every minute).
    if (fault.kind !== "ahead-of-stream" && (await jsm.streams.getMessage(stream, { seq: positions.firstSeq })) === null) {
      if (countedOnly === positions.firstSeq || !remedyDue()) return;
      countedOnly = positions.firstSeq;
      options.logger.warn(
        { stream, durable: config.durable_name, stream_state: positions, leader: streamInfo.cluster?.leader },
        "the work stream's leader counts items it does not hold (none at its first sequence); asking it to step down",
      );
      await stepDownStreamLeader(jsm, stream).catch((error: unknown) => options.logger.warn({ err: error, stream }, "the work stream's leader could not be asked to step down"));
      return;
    }
    if (!remedyDue()) return;
    options.logger.warn(
      { stream, durable: config.durable_name, reason: fault.reason, stream_state: positions, delivered: consumerInfo.delivered, ack_floor: consumerInfo.ack_floor },
      "the work consumer strands items its stream holds; recreating it",
    );
    // Another worker may have recreated it since: only the consumer that was checked is removed.
    const current = await jsm.consumers.info(stream, config.durable_name).catch(() => undefined);
    if (current?.created === consumerInfo.created) {
      await jsm.consumers.delete(stream, config.durable_name).catch((error: unknown) => {
        if (!isConsumerNotFound(error)) throw error;
      });
    }
    await ensureWorkConsumer(jsm, stream, config, options.logger);
  };
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    check()
      .catch((error: unknown) => {
        // NATS not answering (a node restarting) is the soak's daily weather: check again later.
        suspect = undefined;
        options.logger.debug({ err: error, stream }, "could not compare the work consumer with its stream");
      })
      .finally(() => {
        checking = false;
      });
  }, every);
  timer.unref();
  return timer;
}

/**
 * Asks a replicated stream's leader to step down, so a current replica takes over. nats.js has
 * no call for it: the API request goes on the manager's own connection, under its API prefix.
 */
export async function stepDownStreamLeader(jsm: JetStreamManager, stream: string): Promise<void> {
  const nc = (jsm as unknown as { getConnection?: () => NatsConnection }).getConnection?.();
  if (nc === undefined) throw new Error("this JetStream manager does not expose its connection");
  const prefix = jsm.getOptions().apiPrefix ?? "$JS.API";
  const reply = await nc.request(`${prefix}.STREAM.LEADER.STEPDOWN.${stream}`, undefined, { timeout: 5_000 });
  const answer = parseJsonOrUndefined(reply.string()) as { success?: boolean; error?: { description?: string; code?: number } } | undefined;
  if (answer?.success !== true) throw new Error(`the stepdown of ${stream}'s leader was refused: ${answer?.error?.description ?? reply.string()}`);
}

function isConsumerNotFound(error: unknown): boolean {
  const e = error as { code?: unknown; api_error?: { err_code?: number }; message?: string };
  return e.api_error?.err_code === 10014 || e.code === "404" || /consumer not found/i.test(e.message ?? "");
}

/** Creates the durable work consumer, or brings an existing one's ack wait up to this version's. */
async function ensureWorkConsumer(jsm: JetStreamManager, stream: string, config: Partial<ConsumerConfig> & { durable_name: string; ack_wait: number }, logger: Logger): Promise<void> {
  const ackWaitMs = config.ack_wait / 1_000_000;
  try {
    const existing = await jsm.consumers.info(stream, config.durable_name);
    // A durable made by an older version keeps its ack wait until told otherwise: a claim's
    // failure detection must follow this version's setting.
    if (existing.config.ack_wait !== config.ack_wait) {
      await jsm.consumers.update(stream, config.durable_name, { ack_wait: config.ack_wait });
      logger.info({ durable: config.durable_name, ackWaitMs }, "updated the work consumer's ack wait");
    }
  } catch (error) {
    if (!isConsumerNotFound(error)) throw error;
    await jsm.consumers.add(stream, config).catch(async (error: unknown) => {
      await jsm.consumers.info(stream, config.durable_name).catch(() => {
        throw error;
      });
    });
  }
}
