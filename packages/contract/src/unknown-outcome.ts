// What an API client does when it cannot tell whether its append landed: no answer came back
// (the gateway restarting, a connection reset), or the gateway said it is unavailable (NATS
// failing over, a store full). Sent again with the same idempotency key, an append that did land
// answers `duplicate` with what was stored, so it is stored once. The CLI and the web UI both
// send a user's message this way, each telling its own errors apart.

/** The waits before each new attempt: after 0.5, 1 and 2 s, then the last error stands. */
export const UNKNOWN_OUTCOME_RETRY_DELAYS_MS: readonly number[] = [500, 1_000, 2_000];

/** An HTTP status saying the gateway is unavailable (502, 503, 504): the call may be sent again. */
export function isUnavailableStatus(status: number): boolean {
  return status >= 502 && status <= 504;
}

/**
 * Calls again while `unknown(error)` says the outcome is unknown, after each wait of
 * UNKNOWN_OUTCOME_RETRY_DELAYS_MS. Only for a request that carries an idempotency key.
 */
export async function retryWhileOutcomeUnknown<T>(call: () => Promise<T>, unknown: (error: unknown) => boolean, onRetry: (error: unknown, delayMs: number) => void = () => undefined): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const delayMs = UNKNOWN_OUTCOME_RETRY_DELAYS_MS[attempt];
      if (!unknown(error) || delayMs === undefined) throw error;
      onRetry(error, delayMs);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
