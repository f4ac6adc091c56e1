// What a resuming follower must show after faults: every durable offset 1..n once, in order.

/** Offsets 1..n exactly once each, in order? Returns the gaps and duplicates seen (out of order counts as one duplicate). */
export function checkSequence(received: readonly number[], n: number): { gaps: number; duplicates: number } {
  let duplicates = 0;
  const seen = new Set<number>();
  for (const o of received) {
    if (seen.has(o)) duplicates += 1;
    seen.add(o);
  }
  let gaps = 0;
  for (let o = 1; o <= n; o += 1) if (!seen.has(o)) gaps += 1;
  const ordered = received.every((o, i) => i === 0 || o > received[i - 1]!);
  return { gaps, duplicates: duplicates + (ordered ? 0 : 1) };
}
