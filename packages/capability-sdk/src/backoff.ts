// How long a provider waits before its next registration attempt: exponential from `initialMs`,
// capped at `maxMs`, with jitter so providers that lost the host together do not retry in
// lock-step. Pure (the random source is passed in) so the policy is tested without timers.

export interface BackoffPolicy {
  /** Delay before the first retry (default 200 ms). */
  readonly initialMs: number;
  /** No delay is longer than this (default 5 s). */
  readonly maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 200, maxMs: 5_000 };

/**
 * The delay before retry number `attempt` (1 = the first retry): the capped exponential
 * `min(maxMs, initialMs * 2^(attempt-1))`, scaled by a jitter factor in [0.5, 1).
 */
export function backoffDelayMs(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const exponent = Math.max(0, Math.min(attempt - 1, 30));
  const ceiling = Math.min(policy.maxMs, policy.initialMs * 2 ** exponent);
  return Math.round(ceiling * (0.5 + 0.5 * Math.min(Math.max(random(), 0), 0.999_999)));
}
