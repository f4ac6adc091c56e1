// One agent's usage of a shared store (its files, its KV keys), counted in one KV entry per agent
// and moved by compare-and-set before anything is stored, so one agent's scripts cannot fill a
// bucket every agent shares. A growth past the agent's quota is refused. The usage is counted
// afresh from the store itself when it has none yet (data written before quotas) and whenever a
// growth would pass the quota, so a count left high by a host killed mid-write never refuses what
// there is room for. An agent's writes run one at a time in a host (`PerAgentQueue`), so a fresh
// count misses no write of this host in flight; another host's may be, and then the agent ends
// at most that write over its quota.

import { isWrongRevision } from "@agentrt/service-kit";
import type { KV } from "@nats-io/kv";

export interface Quota {
  readonly bytes: number;
  /** Files, or keys. */
  readonly entries: number;
}

export interface Usage {
  readonly bytes: number;
  readonly entries: number;
}

const CAS_ATTEMPTS = 10;

export class UsageMeter {
  constructor(
    private readonly kv: KV,
    /** The agent's usage entry: a key no entry of the store itself can have. */
    private readonly keyOf: (agentPath: string) => string,
    readonly quota: Quota,
    /** The agent's usage counted from the store. */
    private readonly count: (agentPath: string) => Promise<Usage>,
  ) {}

  /** Takes `change` into the agent's usage; a growth past the quota throws `refuse(the usage it would reach)`. */
  take(agentPath: string, change: Usage, refuse: (reached: Usage) => Error): Promise<void> {
    return this.move(agentPath, change, refuse);
  }

  /** Gives `freed` back: a deletion, or a write that failed after `take`. */
  giveBack(agentPath: string, freed: Usage): Promise<void> {
    return this.move(agentPath, { bytes: -freed.bytes, entries: -freed.entries }, undefined);
  }

  private async move(agentPath: string, change: Usage, refuse: ((reached: Usage) => Error) | undefined): Promise<void> {
    const key = this.keyOf(agentPath);
    // A give-back may leave the usage over a quota since lowered, never refused.
    const grows = refuse !== undefined && (change.bytes > 0 || change.entries > 0);
    for (let attempt = 1; ; attempt++) {
      const entry = await this.kv.get(key);
      const stored = entry !== null && entry.operation === "PUT" ? (entry.json() as Usage) : undefined;
      let usage = stored ?? (await this.count(agentPath));
      if (grows && stored !== undefined && this.over(usage, change)) usage = await this.count(agentPath);
      if (grows && this.over(usage, change)) throw refuse({ bytes: usage.bytes + change.bytes, entries: usage.entries + change.entries });
      const next = JSON.stringify({ bytes: Math.max(0, usage.bytes + change.bytes), entries: Math.max(0, usage.entries + change.entries) } satisfies Usage);
      try {
        if (entry === null) await this.kv.create(key, next);
        else await this.kv.update(key, next, entry.revision);
        return;
      } catch (error) {
        // Another host moved this agent's usage in between: look again.
        if (!isWrongRevision(error) || attempt === CAS_ATTEMPTS) throw error;
      }
    }
  }

  private over(usage: Usage, change: Usage): boolean {
    return usage.bytes + change.bytes > this.quota.bytes || usage.entries + change.entries > this.quota.entries;
  }
}

/** Runs each agent's tasks one at a time, in the order they were given, in this process. */
export class PerAgentQueue {
  private readonly running = new Map<string, Promise<unknown>>();

  async run<T>(agentPath: string, task: () => Promise<T>): Promise<T> {
    const previous = this.running.get(agentPath) ?? Promise.resolve();
    const mine = previous.then(task, task);
    this.running.set(agentPath, mine);
    try {
      return await mine;
    } finally {
      if (this.running.get(agentPath) === mine) this.running.delete(agentPath);
    }
  }
}
