// Retrying an operation in-process across a NATS blip. A settlement append that fails while a
// NATS node is down or a stream leader is being elected would otherwise throw the work item
// back to the queue, whose backoff and the reducer's re-issue can keep a finished turn waiting
// for tens of seconds after NATS is back (the chaos soak's stuck turn, issue 16). Retrying
// here, a few hundred milliseconds apart, lands it as soon as the cluster answers again.
//
// Only what the stores classify as `unavailable` is retried: a timeout, no responders, a lost
// or reconnecting connection, a JetStream 503 (packages/streams jetstream/errors.ts). Anything
// else is the caller's to handle, as before. The operation must be safe to repeat: a keyed
// append is, since a retry of an append that did land answers `duplicate` instead of writing.

import { isAgentRuntimeError } from "@agentrt/contract";
import { createShared, isTransientNatsError } from "@agentrt/streams/jetstream";
import { JetStreamApiError } from "@nats-io/jetstream";

/** The server's `JSClusterNoPeersErrF`: no placement for a replicated stream (yet). */
const NO_SUITABLE_PEERS = 10005;

/** NATS did not answer (the outcome of a write may be unknown): worth trying again shortly. */
export function isTransientFailure(error: unknown): boolean {
  return isAgentRuntimeError(error) && error.code === "unavailable" && error.retryable;
}

export interface TransientRetryOptions {
  /** Stops retrying (the last error is thrown) once aborted: the process is shutting down. */
  readonly signal?: AbortSignal | undefined;
  /** No new attempt starts later than this after the first one began (default 12 s). */
  readonly budgetMs?: number;
  /** The first pause; each later one doubles, up to `maxDelayMs` (defaults 100 ms and 2 s). */
  readonly firstDelayMs?: number;
  readonly maxDelayMs?: number;
  /** Called before each pause (logging). */
  readonly onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  readonly now?: () => number;
}

/**
 * Runs `operation`, repeating it while it fails transiently and the budget lasts. The budget
 * (12 s by default) covers a node restart and the election after it; an outage longer than
 * that is left to the caller's own retry (the work queue's redelivery).
 */
export async function retryTransient<T>(operation: () => Promise<T>, options: TransientRetryOptions = {}): Promise<T> {
  const now = options.now ?? Date.now;
  const deadline = now() + (options.budgetMs ?? 12_000);
  const maxDelayMs = options.maxDelayMs ?? 2_000;
  let delayMs = options.firstDelayMs ?? 100;
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (!isTransientFailure(error) || options.signal?.aborted === true) throw error;
      const pause = Math.min(delayMs, deadline - now());
      if (pause <= 0) throw error;
      options.onRetry?.(error, attempt, pause);
      if (!(await sleep(pause, options.signal))) throw error;
      delayMs = Math.min(delayMs * 2, maxDelayMs);
    }
  }
}

/** False when the signal aborted the pause. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (slept: boolean): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(slept);
    };
    const onAbort = (): void => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * NATS is up but not answering JetStream requests yet: what a service meets when it starts while
 * a node is down or leaders are being elected — not a configuration error, so worth waiting for.
 * It is the store's rule for a transient NATS failure (`isTransientNatsError`: a timeout, no
 * responders, a lost connection, a 503, "JetStream not enabled" caused by no responders), or an
 * error the store already classified `unavailable`, plus one case only start-up meets: "JetStream
 * not enabled" on its own, which a server answers while it is still recovering its store after a
 * restart, and "no suitable peers for placement", which a freshly elected meta leader answers a
 * replicated create-or-bind until the restarted nodes have reported in (the CI run of 2026-12-02:
 * the host exited on it as the test's two nodes came back). After a start-up, the first is a
 * server without JetStream and the second a cluster with fewer nodes than the replicas asked
 * for; the wait's budget ends either with the server's own message.
 */
export function isNatsNotAnswering(error: unknown): boolean {
  if (isTransientFailure(error) || isTransientNatsError(error)) return true;
  if (!(error instanceof Error)) return false;
  if (error.name === "JetStreamNotEnabled") return true;
  if (error instanceof JetStreamApiError && error.code === NO_SUITABLE_PEERS) return true;
  return error.cause !== undefined && error.cause !== error && isNatsNotAnswering(error.cause);
}

/** How long a service waits at start-up for NATS to answer before it gives up and exits. */
export const DEFAULT_STARTUP_NATS_WAIT_MS = 120_000;

/**
 * Runs one start-up step (opening a stream, a bucket, the JetStream manager), repeating it while
 * NATS does not answer, for up to `budgetMs` (default 2 min): a service started during a node's
 * restart or a leader election waits for the cluster in-process instead of exiting and being
 * restarted by its supervisor, whose back-off (Kubernetes: 10 s, 20 s, 40 s … up to 5 min) would
 * keep it down long after NATS answered again. A step must be safe to repeat (they are all
 * create-or-bind). Anything else (a refused configuration) throws at once.
 */
export async function untilNatsAnswers<T>(
  what: string,
  step: () => Promise<T>,
  options: { readonly logger?: { warn(obj: object, msg: string): void }; readonly budgetMs?: number; readonly now?: () => number } = {},
): Promise<T> {
  const now = options.now ?? Date.now;
  const deadline = now() + (options.budgetMs ?? DEFAULT_STARTUP_NATS_WAIT_MS);
  let delayMs = 250;
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      const pause = Math.min(delayMs, deadline - now());
      if (!isNatsNotAnswering(error) || pause <= 0) throw error;
      options.logger?.warn({ err: error, attempt, retryInMs: pause }, `${what}: NATS is not answering yet; waiting for it`);
      await new Promise((resolve) => setTimeout(resolve, pause));
      delayMs = Math.min(delayMs * 2, 4_000);
    }
  }
}

/**
 * A start-up step that creates a stream or bucket every replica creates when missing: repeated
 * while NATS does not answer (`untilNatsAnswers`) and while another process's create of it is
 * under way (`createShared`), so services started together all start.
 */
export function untilCreated<T>(what: string, create: () => Promise<T>, options: Parameters<typeof untilNatsAnswers>[2] = {}): Promise<T> {
  return untilNatsAnswers(what, () => createShared(create), options);
}
