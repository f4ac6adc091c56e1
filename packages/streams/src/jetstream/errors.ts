// NATS failures classified once into the contract's error codes: timeouts, lost connections
// and missing responders are `unavailable` (retryable); anything else the server refuses is
// `internal`. Callers map codes to HTTP/gRPC/broker actions elsewhere.

import { AgentRuntimeError } from "@agentrt/contract";
import { JetStreamApiError, JetStreamApiCodes } from "@nats-io/jetstream";
import { errors } from "@nats-io/nats-core";
import { PublishRejectedError, PublishUnconfirmedError } from "./publisher.ts";

export function isWrongLastSequence(error: unknown): boolean {
  if (error instanceof PublishRejectedError) return error.wrongLastSequence;
  return error instanceof JetStreamApiError && (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown);
}

/**
 * nats-server's codes for a store that is full: insufficient resources (10023), memory (10028) or
 * storage (10047) resources exceeded. Such a refusal clears once space is freed or the store
 * grown; taken as final, the reducer dropped reactions (a reply the user never saw), drivers and
 * hosts dropped their work items (a finished script's result lost, later settled "orphaned") and
 * the gateway answered 500, so clients did not retry (red-team).
 */
const STORE_FULL_CODES: ReadonlySet<number> = new Set([10023, 10028, 10047]);

export function isTransient(error: unknown): boolean {
  return (
    error instanceof PublishUnconfirmedError ||
    (error instanceof PublishRejectedError && (error.status === 503 || STORE_FULL_CODES.has(error.errCode))) ||
    (error instanceof JetStreamApiError && STORE_FULL_CODES.has(error.code)) ||
    error instanceof errors.TimeoutError ||
    error instanceof errors.NoRespondersError ||
    error instanceof errors.ClosedConnectionError ||
    error instanceof errors.DrainingConnectionError ||
    error instanceof errors.ConnectionError ||
    (error instanceof errors.RequestError && isTransient(error.cause)) ||
    // "JetStream not enabled" is how the client reports no responders to a JetStream request
    // (a stream or bucket without a leader while a node restarts): transient when that is its cause.
    (error instanceof Error && error.name === "JetStreamNotEnabled" && isTransient(error.cause)) ||
    (error instanceof JetStreamApiError && error.status === 503) ||
    // The store only ever looks up its own ephemeral (ordered) consumers: one that vanished
    // under a read was lost with a NATS node (the chaos soak), and a fresh read succeeds.
    (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound) ||
    // Every stream the services use is created at start-up and never removed by them, yet a
    // replicated one is answered "stream not found" by a node that has not caught up with the
    // cluster's meta state during an election (the chaos soak: a driver took it as final and
    // dropped its turn's work item). Start-up's create-if-missing reads the raw error before
    // anything classifies it; a stream an operator deleted under running services is retried
    // with the same message until it is back.
    (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)
  );
}

/** Wraps any failure as an AgentRuntimeError (already classified ones pass through). */
export function classifyNatsError(error: unknown, what: string): AgentRuntimeError {
  if (error instanceof AgentRuntimeError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof PublishUnconfirmedError) {
    return new AgentRuntimeError(
      "unavailable",
      `${what}: not confirmed by JetStream (${message}); the batch may or may not have been committed — retry (idempotency keys make the retry safe).`,
      { retryable: true, cause: error, details: { outcome: "unknown" } },
    );
  }
  if (isTransient(error)) {
    return new AgentRuntimeError("unavailable", `${what}: NATS is unavailable (${message}); retry later.`, { retryable: true, cause: error });
  }
  return new AgentRuntimeError("internal", `${what}: ${message}`, { cause: error });
}

/** An abort the caller asked for (its AbortSignal's reason) is not a NATS failure: it passes through. */
export async function classified<T>(what: string, operation: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (signal?.aborted === true && error === signal.reason) throw error;
    throw classifyNatsError(error, what);
  }
}
