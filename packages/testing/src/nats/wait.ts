// Deadline-bounded polling: tests wait for the condition they expect, never for a fixed time.

export interface WaitOptions {
  readonly timeoutMs?: number;
  /** Pause between attempts; short, because each attempt is cheap. */
  readonly intervalMs?: number;
  /** Says what was awaited when the deadline passes. */
  readonly what?: string;
  /** An error for which waiting longer cannot help: rethrown at once. */
  readonly failFast?: (error: unknown) => boolean;
}

/** Calls `probe` until it returns a value other than undefined/false, or throws at the deadline. */
export async function waitFor<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, options: WaitOptions = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  const interval = options.intervalMs ?? 25;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      if (options.failFast?.(error) === true) throw error;
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : "";
      throw new Error(`timed out after ${options.timeoutMs ?? 10_000} ms waiting for ${options.what ?? "condition"}${why}`);
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

/** What `waitForConsumerEmptied` reads of a JetStream consumer's info. */
export interface ConsumerCounts {
  readonly num_ack_pending: number;
  readonly num_pending: number;
  readonly delivered: { readonly consumer_seq: number };
}

/**
 * Waits until a consumer holds nothing after at least `deliveries` deliveries (an item was taken
 * and dropped, not left for redelivery), then checks it delivers nothing more for `quietMs`.
 */
export async function waitForConsumerEmptied(info: () => Promise<ConsumerCounts>, options: { deliveries: number; quietMs?: number; timeoutMs?: number; what?: string }): Promise<void> {
  await waitFor(
    async () => {
      const counts = await info();
      return counts.num_ack_pending === 0 && counts.num_pending === 0 && counts.delivered.consumer_seq >= options.deliveries;
    },
    { timeoutMs: options.timeoutMs ?? 15_000, intervalMs: 200, what: options.what ?? "the consumer to hold nothing" },
  );
  const delivered = (await info()).delivered.consumer_seq;
  await new Promise((resolve) => setTimeout(resolve, options.quietMs ?? 1_500));
  const after = (await info()).delivered.consumer_seq;
  if (after !== delivered) throw new Error(`${options.what ?? "the consumer"}: delivered ${after - delivered} more after it held nothing`);
}
