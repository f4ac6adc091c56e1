// A push-to-pull bridge: producers push items, one consumer iterates them. Ending (or failing)
// wakes the consumer; items pushed after the end are dropped. Subscriptions of both stores
// are built on it. A producer that can wait (reading history page by page, a consumer of a
// JetStream stream) awaits `below(n, weight)` before producing more, so a consumer that stops
// taking holds it back. An item may be pushed with a weight (its bytes), summed while it waits.

export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private readonly weights: number[] = [];
  private waiting = 0;
  private waiter: (() => void) | undefined;
  private belowWaiters: { readonly limit: number; readonly weightLimit: number; readonly resolve: () => void }[] = [];
  private ended = false;
  private failure: unknown;
  private readonly onReturn: () => void;

  /** `onReturn` runs when the consumer stops iterating early (break/return). */
  constructor(onReturn: () => void = () => undefined) {
    this.onReturn = onReturn;
  }

  get closed(): boolean {
    return this.ended;
  }

  /** Items pushed and not yet taken. */
  get size(): number {
    return this.items.length;
  }

  /** The summed weight of the items pushed and not yet taken. */
  get weight(): number {
    return this.waiting;
  }

  /**
   * Resolves once at most `limit` items, weighing at most `weightLimit` together, are waiting to
   * be taken, or the queue has ended.
   */
  below(limit: number, weightLimit = Number.POSITIVE_INFINITY): Promise<void> {
    if (this.ended || this.fits(limit, weightLimit)) return Promise.resolve();
    return new Promise((resolve) => this.belowWaiters.push({ limit, weightLimit, resolve }));
  }

  private fits(limit: number, weightLimit: number): boolean {
    return this.items.length <= limit && this.waiting <= weightLimit;
  }

  push(item: T, weight = 0): void {
    if (this.ended) return;
    this.items.push(item);
    this.weights.push(weight);
    this.waiting += weight;
    this.wake();
  }

  end(failure?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = failure;
    this.wake();
    this.releaseBelow();
  }

  private releaseBelow(): void {
    if (this.belowWaiters.length === 0) return;
    const waiting = this.belowWaiters;
    this.belowWaiters = [];
    for (const w of waiting) {
      if (this.ended || this.fits(w.limit, w.weightLimit)) w.resolve();
      else this.belowWaiters.push(w);
    }
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    try {
      for (;;) {
        if (this.items.length > 0) {
          const item = this.items.shift() as T;
          this.waiting -= this.weights.shift() as number;
          this.releaseBelow();
          yield item;
          continue;
        }
        if (this.ended) {
          if (this.failure !== undefined) throw this.failure;
          return;
        }
        await new Promise<void>((resolve) => {
          this.waiter = resolve;
        });
      }
    } finally {
      if (!this.ended) {
        this.ended = true;
        this.onReturn();
        this.releaseBelow();
      }
    }
  }
}
