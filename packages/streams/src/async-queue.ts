// A push-to-pull bridge: producers push items, one consumer iterates them. Ending (or failing)
// wakes the consumer; items pushed after the end are dropped. Subscriptions of both stores
// are built on it.

export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: (() => void) | undefined;
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

  push(item: T): void {
    if (this.ended) return;
    this.items.push(item);
    this.wake();
  }

  end(failure?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = failure;
    this.wake();
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
          yield this.items.shift() as T;
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
      }
    }
  }
}
