// A JetStream stream (a KV or object bucket is one) that every replica of every service creates
// when it is missing, so that any of them can start first. Started together (the quickstart, a
// Helm install, a rollout), several create it at the same moment, and nats-server 2.9 refuses all
// but one while the first create is under way: "subjects overlap with an existing stream",
// "stream name already in use" or "error creating store for stream", though the stream is about
// to exist with the very configuration asked for. Such a refusal is a race, not a failure: the
// create is tried again (a bucket's create looks first and finds it), and only a refusal that
// outlasts the budget is thrown.

import { JetStreamApiError } from "@nats-io/jetstream";

/** The server's answers to a create racing another create of the same stream. */
const RACE_CODES: ReadonlySet<number> = new Set([
  10049, // "error creating store for stream" (the other create holds the store)
  10058, // "stream name already in use" (created between our look and our add)
  10065, // "subjects overlap with an existing stream" (the other create is under way)
]);

/** How long a racing create is tried again before its refusal is final (a replicated create elects a leader first). */
export const SHARED_CREATE_BUDGET_MS = 10_000;

export function isCreateRace(error: unknown): boolean {
  return error instanceof JetStreamApiError && RACE_CODES.has(error.code);
}

/**
 * Runs `create` (a look-then-create of a stream other processes may be creating too), trying it
 * again while the server answers as it does to a racing create, for at most `budgetMs`.
 */
export async function createShared<T>(create: () => Promise<T>, options: { readonly budgetMs?: number; readonly now?: () => number } = {}): Promise<T> {
  const now = options.now ?? Date.now;
  const deadline = now() + (options.budgetMs ?? SHARED_CREATE_BUDGET_MS);
  for (let attempt = 1; ; attempt++) {
    try {
      return await create();
    } catch (error) {
      const pause = Math.min(50 * attempt, 1_000, deadline - now());
      if (!isCreateRace(error) || pause <= 0) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
