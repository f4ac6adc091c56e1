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
