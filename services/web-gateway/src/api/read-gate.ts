// Fair admission for expensive reads (pages, folds, listings): each API key runs at most
// `perKey` of them at once and the gateway at most `total`; the rest wait in arrival order,
// skipping past a key that is at its share. One key's flood of big reads then costs other
// tenants at most a share of the gateway, never a place at the back of its queue.

export interface ReadGateOptions {
  readonly perKey: number;
  readonly total: number;
}

interface Waiter {
  readonly caller: string;
  readonly start: () => void;
}

export class ReadGate {
  private running = 0;
  private readonly perCaller = new Map<string, number>();
  private readonly waiting: Waiter[] = [];

  constructor(private readonly options: ReadGateOptions) {}

  /** Runs `work` once admitted; a signal aborted while waiting gives up the place. */
  async run<T>(caller: string, signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
    await this.admit(caller, signal);
    try {
      return await work();
    } finally {
      this.release(caller);
    }
  }

  private admit(caller: string, signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    if (this.canStart(caller)) {
      this.started(caller);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        caller,
        start: () => {
          signal?.removeEventListener("abort", onAbort);
          this.started(caller);
          resolve();
        },
      };
      const onAbort = () => {
        const index = this.waiting.indexOf(waiter);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private canStart(caller: string): boolean {
    return this.running < this.options.total && (this.perCaller.get(caller) ?? 0) < this.options.perKey;
  }

  private started(caller: string): void {
    this.running++;
    this.perCaller.set(caller, (this.perCaller.get(caller) ?? 0) + 1);
  }

  private release(caller: string): void {
    this.running--;
    const left = (this.perCaller.get(caller) ?? 1) - 1;
    if (left === 0) this.perCaller.delete(caller);
    else this.perCaller.set(caller, left);
    for (let i = 0; i < this.waiting.length && this.running < this.options.total; ) {
      const waiter = this.waiting[i] as Waiter;
      if (!this.canStart(waiter.caller)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      waiter.start();
    }
  }

  /** Reads waiting for admission (for metrics and tests). */
  get queued(): number {
    return this.waiting.length;
  }
}
