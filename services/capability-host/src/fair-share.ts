// Fair sharing of a host's script slots between agents: at most `total` scripts run at once,
// at most `perAgent` of them for one agent, and free slots go round-robin to the agents that
// have scripts waiting, so one agent's flood queues behind its own limit, not in front of every
// other agent. An agent that already has `waitingPerAgent` scripts waiting is refused another
// (its work item goes back to the queue for later), so a flood cannot fill the host's claims.
// Pure bookkeeping: no timers, no IO.

export interface FairShareLimits {
  readonly total: number;
  readonly perAgent: number;
  readonly waitingPerAgent: number;
}

export type Leave = () => void;

export class AgentFairShare {
  private running = 0;
  private readonly runningOf = new Map<string, number>();
  private readonly waiting = new Map<string, Array<(leave: Leave | undefined) => void>>();
  private closed = false;
  /** Agents with waiting scripts, in the order they are next served. */
  private readonly turn: string[] = [];

  constructor(private readonly limits: FairShareLimits) {
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be an integer ≥ 1, got ${String(value)}`);
    }
  }

  /**
   * A slot for one of `agent`'s scripts: resolves with the function that gives it back once the
   * script may run, or with `undefined` if the share is closed first; `undefined` at once when
   * the agent already has its fill of scripts waiting, or the share is closed.
   */
  enter(agent: string): Promise<Leave | undefined> | undefined {
    const queue = this.waiting.get(agent) ?? [];
    if (this.closed || queue.length >= this.limits.waitingPerAgent) return undefined;
    return new Promise((resolve) => {
      if (queue.length === 0) {
        this.waiting.set(agent, queue);
        this.turn.push(agent);
      }
      queue.push(resolve);
      this.grant();
    });
  }

  /** Stops granting: every waiting script is told `undefined` (its item goes back to the queue). */
  close(): void {
    this.closed = true;
    this.turn.length = 0;
    for (const queue of this.waiting.values()) for (const wake of queue.splice(0)) wake(undefined);
    this.waiting.clear();
  }

  /** Scripts running now, for one agent or in all. */
  runningCount(agent?: string): number {
    return agent === undefined ? this.running : (this.runningOf.get(agent) ?? 0);
  }

  waitingCount(agent: string): number {
    return this.waiting.get(agent)?.length ?? 0;
  }

  private grant(): void {
    if (this.closed) return;
    let scanned = 0;
    while (this.running < this.limits.total && scanned < this.turn.length) {
      const agent = this.turn.shift() as string;
      if ((this.runningOf.get(agent) ?? 0) >= this.limits.perAgent) {
        // At its own limit: keeps its place at the back, others go first.
        this.turn.push(agent);
        scanned++;
        continue;
      }
      scanned = 0;
      const queue = this.waiting.get(agent) as Array<(leave: Leave | undefined) => void>;
      const wake = queue.shift() as (leave: Leave | undefined) => void;
      if (queue.length === 0) this.waiting.delete(agent);
      else this.turn.push(agent);
      this.running++;
      this.runningOf.set(agent, (this.runningOf.get(agent) ?? 0) + 1);
      let left = false;
      wake(() => {
        if (left) return;
        left = true;
        this.running--;
        const mine = (this.runningOf.get(agent) ?? 1) - 1;
        if (mine === 0) this.runningOf.delete(agent);
        else this.runningOf.set(agent, mine);
        this.grant();
      });
    }
  }
}
