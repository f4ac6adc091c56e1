// Closed-loop load generation and latency statistics for the store benchmark: C workers each
// run operations back to back until N operations are done; every operation's latency is kept.

export interface LoadResult {
  readonly operations: number;
  readonly events: number;
  readonly elapsedMs: number;
  readonly latenciesMs: number[];
}

export async function closedLoop(operations: number, concurrency: number, eventsPerOp: number, op: (i: number) => Promise<unknown>): Promise<LoadResult> {
  const latencies: number[] = new Array<number>(operations);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const i = next++;
        if (i >= operations) return;
        const t0 = performance.now();
        await op(i);
        latencies[i] = performance.now() - t0;
      }
    }),
  );
  return { operations, events: operations * eventsPerOp, elapsedMs: performance.now() - started, latenciesMs: latencies };
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

export function eventsPerSecond(result: LoadResult): number {
  return result.events / (result.elapsedMs / 1000);
}
