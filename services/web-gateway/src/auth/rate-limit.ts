// Per-key token buckets: each request takes one token; tokens refill continuously at
// `perSecond` up to `burst`. Pure apart from the clock it is given.

export interface BucketPolicy {
  readonly perSecond: number;
  readonly burst: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; atMs: number }>();

  constructor(
    private readonly defaultPolicy: BucketPolicy,
    private readonly nowMs: () => number,
  ) {}

  /** Takes a token; returns 0 when allowed, else the milliseconds until one is available. */
  take(key: string, policy: BucketPolicy = this.defaultPolicy): number {
    const now = this.nowMs();
    const bucket = this.buckets.get(key) ?? { tokens: policy.burst, atMs: now };
    const tokens = Math.min(policy.burst, bucket.tokens + ((now - bucket.atMs) / 1000) * policy.perSecond);
    if (tokens >= 1) {
      this.buckets.set(key, { tokens: tokens - 1, atMs: now });
      return 0;
    }
    this.buckets.set(key, { tokens, atMs: now });
    return Math.ceil(((1 - tokens) / policy.perSecond) * 1000);
  }
}
