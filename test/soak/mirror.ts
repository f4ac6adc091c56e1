// What the soak's agents see of their streams: ONE feed over every partition (resumed after a
// failover from the last batch it saw) folded into a per-path copy of the events, so fifty
// agents can wait for their answers without each polling the broker.

import type { AgentEvent } from "@agentrt/contract";
import type { EventStore } from "@agentrt/streams";

export class StreamMirror {
  private readonly events = new Map<string, AgentEvent[]>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private closed = false;
  private current: { close(): Promise<void> } | undefined;
  private afterSequence = 0;
  /** How often the feed ended under the mirror and was resumed. */
  resumes = 0;
  private readonly running: Promise<void>;

  constructor(private readonly store: EventStore) {
    this.running = this.run();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        const feed = this.store.feed({ afterSequence: this.afterSequence });
        this.current = feed;
        for await (const batch of feed) {
          this.afterSequence = batch.sequence;
          this.add(batch.streamPath, batch.events);
        }
      } catch {
        // the feed's consumer went away (a NATS node died): resume after the last batch
      }
      if (this.closed) break;
      this.resumes += 1;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  private add(path: string, batch: readonly AgentEvent[]): void {
    let list = this.events.get(path);
    if (!list) this.events.set(path, (list = []));
    for (const event of batch) if (event.offset === list.length + 1) list.push(event);
    for (const wake of [...(this.waiters.get(path) ?? [])]) wake();
  }

  of(path: string): readonly AgentEvent[] {
    return this.events.get(path) ?? [];
  }

  /** Resolves with the first event (from `fromOffset`) that `match` accepts; rejects after `timeoutMs`. */
  async waitFor(path: string, fromOffset: number, match: (e: AgentEvent) => boolean, timeoutMs: number): Promise<AgentEvent> {
    const find = () => this.of(path).slice(Math.max(0, fromOffset - 1)).find(match);
    const found = find();
    if (found) return found;
    return await new Promise((resolve, reject) => {
      let set = this.waiters.get(path);
      if (!set) this.waiters.set(path, (set = new Set()));
      const waiters = set;
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`${path}: no matching event from offset ${fromOffset} within ${timeoutMs} ms`));
      }, timeoutMs);
      const check = () => {
        const hit = find();
        if (!hit) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(hit);
      };
      waiters.add(check);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.current?.close().catch(() => undefined);
    await this.running;
  }
}
