// The reducer's side effects behind one interface: appending, handing work to drivers and
// hosts, interrupting a driver, publishing runtime transitions and reply previews, and the
// clock. The stream processor is written against this so it can run on the memory store in
// unit tests.

import type { AgentEvent, EventInput, PayloadOf } from "@agentrt/contract";
import { RESERVED_KEY_NAMESPACES, isAgentRuntimeError, mendIllFormedText } from "@agentrt/contract";
import type { EventStore } from "@agentrt/streams";
import { inSpan, publishWork, requestInterrupt, triggerOffsetOfRequestKey, turnContext, type WorkOutcome } from "@agentrt/service-kit";
import type { Tracer } from "@opentelemetry/api";
import type { JetStreamPublisher } from "@agentrt/streams/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "@agentrt/service-kit";

export type HeadAppendOutcome = "committed" | "duplicate" | "conflict";

export interface HeadAppendResult {
  readonly status: HeadAppendOutcome;
  /** The committed events (empty unless committed). */
  readonly events: readonly AgentEvent[];
}

export interface ReducerEffects {
  now(): number;
  /** Appends (no expected offset); resolves to the stored events: the new ones, or the originals of a duplicate. */
  append(streamPath: string, batch: readonly EventInput[]): Promise<{ readonly events: readonly AgentEvent[] }>;
  /** Appends only if the stream's last offset is still `expectedLastOffset`. */
  appendAtHead(streamPath: string, batch: readonly EventInput[], expectedLastOffset: number): Promise<HeadAppendResult>;
  /** Hands work to the queue; a re-drive is a new item even within the queue's duplicate window. */
  publishLlmWork(streamPath: string, requestOffset: number, options?: { redrive?: boolean }): Promise<void>;
  publishScriptWork(streamPath: string, requestedOffset: number, executionId: string, options?: { redrive?: boolean }): Promise<void>;
  /** Asks the driver running the request to abort; resolves to its partial text, if any. */
  interruptDriver(streamPath: string, requestOffset: number): Promise<string | undefined>;
  publishRuntime(streamPath: string, payload: PayloadOf<"agent/runtime-changed">): Promise<void>;
  /**
   * Publishes live-lane previews of a streaming reply (`render/*-delta`, ephemeral), placed
   * after `foldedOffset`, the last durable offset the reducer has folded.
   */
  publishPreviews(streamPath: string, deltas: readonly EventInput[], foldedOffset: number): Promise<void>;
}

/** A driver running in the reducer's own process (REDUCER_LLM_DRIVER=in-process): the llm-driver's `runHandedOver`. */
export interface InProcessDriver {
  /** Undefined when it cannot take the request now (at capacity, stopping): the item goes to the queue. */
  runHandedOver(streamPath: string, requestOffset: number): Promise<WorkOutcome> | undefined;
}

export function natsReducerEffects(deps: {
  store: EventStore;
  nc: NatsConnection;
  /** Publishes the work items (one per turn): acknowledged like the store's appends. */
  workPublisher: JetStreamPublisher;
  logger: Logger;
  interruptTimeoutMs: number;
  tracer?: Tracer;
  now?: () => number;
  /**
   * Requests go to this driver directly, not through the work queue, while it has room: no work
   * item to store, deliver, claim and ack, and no hop between processes before the model call.
   * A re-drive still goes to the queue (whoever runs the request now has shown no progress), and
   * so does a handed-over run that must be tried again. A request of a process that dies is
   * re-driven by the reducer that takes its partition over, like one whose item was lost.
   */
  inProcessDriver?: InProcessDriver;
}): ReducerEffects & { handOversSettled(): Promise<void> } {
  const { store, nc, workPublisher, inProcessDriver } = deps;
  /** Handed-over runs with what follows them (a re-queue), until done. */
  const handOvers = new Set<Promise<void>>();
  const queueLlmWork = (streamPath: string, requestOffset: number, options?: { redrive?: boolean }) =>
    publishWork(workPublisher, "llm", store.partitionOf(streamPath), { streamPath, requestOffset }, options);
  return {
    now: deps.now ?? Date.now,
    // What the reducer writes is made of text it did not write (a reply's script, a driver's
    // partial text, records stored before the contract refused lone surrogates): mended, as a
    // UTF-8 decoder would, so the store never refuses a reaction.
    append(streamPath, batch) {
      return store.append(streamPath, mendIllFormedText(batch));
    },
    async appendAtHead(streamPath, batch, expectedLastOffset) {
      const attempt = async (): Promise<HeadAppendResult> => {
        try {
          const result = await store.append(streamPath, mendIllFormedText(batch), { expectedLastOffset, keysNewAtHead: keysOnlyDecidedAtHead(batch) });
          return result.status === "committed" ? result : { status: result.status, events: [] };
        } catch (error) {
          if (isAgentRuntimeError(error) && error.code === "conflict") return { status: "conflict", events: [] };
          throw error;
        }
      };
      // A request append is the reducer's step of a turn: trace it under the turn's trace.
      const trigger = triggerOffsetOfRequestKey(batch.find((e) => e.type === "agent/llm-request-requested")?.idempotencyKey);
      if (trigger === undefined || !deps.tracer) return attempt();
      return inSpan(deps.tracer, "reducer.request", turnContext(streamPath, trigger), { "agentrt.stream_path": streamPath, "agentrt.trigger_offset": trigger }, async (span) => {
        const outcome = await attempt();
        span.setAttribute("agentrt.outcome", outcome.status);
        return outcome;
      });
    },
    async publishLlmWork(streamPath, requestOffset, options) {
      const run = options?.redrive === true ? undefined : inProcessDriver?.runHandedOver(streamPath, requestOffset);
      if (run === undefined) return queueLlmWork(streamPath, requestOffset, options);
      const handOver = run
        .then(async (outcome) => {
          if (outcome.type !== "retry") return;
          await new Promise((resolve) => setTimeout(resolve, outcome.delayMs));
          // Under a new message id: the queue has not seen this item, but a re-issue must not meet an earlier one's id.
          await queueLlmWork(streamPath, requestOffset, { redrive: true });
        })
        .catch((error: unknown) => {
          // The re-drive (quiet time) issues it again.
          deps.logger.warn({ err: error, streamPath, requestOffset }, "a handed-over request could not be put on the work queue");
        })
        .finally(() => handOvers.delete(handOver));
      handOvers.add(handOver);
    },
    /** Resolves when every handed-over run has ended and what it left for the queue is published (shutdown: before the publisher closes). */
    async handOversSettled() {
      await Promise.all([...handOvers]);
    },
    publishScriptWork: (streamPath, requestedOffset, executionId, options) =>
      publishWork(workPublisher, "script", store.partitionOf(streamPath), { streamPath, requestedOffset, executionId }, options),
    async interruptDriver(streamPath, requestOffset) {
      try {
        // Undefined when no driver is running it (or none answered in time).
        return await requestInterrupt(nc, { streamPath, requestOffset }, { timeoutMs: deps.interruptTimeoutMs });
      } catch (error) {
        // Refused or garbled: the request is cancelled all the same, without partial text.
        deps.logger.warn({ err: error, streamPath, requestOffset }, "interrupt failed; cancelling without partial text");
        return undefined;
      }
    },
    // Live events sit after what the reducer folded: it knows that offset, so the store need
    // not look the stream's last record up for each of them.
    async publishRuntime(streamPath, payload) {
      await store.append(streamPath, [{ type: "agent/runtime-changed", payload, ephemeral: true }], { knownLastOffset: payload.sinceOffset });
    },
    async publishPreviews(streamPath, deltas, foldedOffset) {
      await store.append(streamPath, mendIllFormedText(deltas), { knownLastOffset: foldedOffset });
    },
  };
}

/** Key namespaces built by the core's head decision alone (decideAtHead), never appended any other way. */
const HEAD_ONLY_KEYS = [RESERVED_KEY_NAMESPACES.request, RESERVED_KEY_NAMESPACES.pause, RESERVED_KEY_NAMESPACES.resume];

/**
 * Whether a batch decided at the head may have its keys reserved alongside its publish
 * (`keysNewAtHead`). It was decided from this reducer's fold of exactly the stream through
 * the expected offset, and the core never decides a key that fold holds (a request's, a
 * pause's and a resume's key names a trigger still pending, which the event clears): so its
 * keys are new. And only reducers at the head ever append these keys, a loser deciding again
 * from its fold, so no writer trusts the key index for them in the moment between a publish
 * and its reservation. An expiry is not one: its settlement key is the driver's as well, and
 * the driver appends without a head.
 */
function keysOnlyDecidedAtHead(batch: readonly EventInput[]): boolean {
  return batch.every((e) => e.idempotencyKey !== undefined && HEAD_ONLY_KEYS.some((ns) => (e.idempotencyKey as string).startsWith(ns.prefix)));
}
