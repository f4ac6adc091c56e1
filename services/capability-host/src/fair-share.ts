// Fair sharing of a host's script slots between agents: at most `total` scripts run at once,
// at most `perAgent` of them for one agent, and free slots go round-robin to the agents that
// have scripts waiting, so one agent's flood queues behind its own limit, not in front of every
// other agent; and above the agents, tenants take turns the same way, so a tenant's flood through
// many agents does not crowd out another tenant. An agent that already has `waitingPerAgent`
// scripts waiting, or whose tenant has `waitingPerTenant`, is refused another (its work item goes
// back to the queue for later), so a flood cannot fill the host's claims.
// Pure bookkeeping: no timers, no IO.

export interface FairShareLimits {
  readonly total: number;
  readonly perAgent: number;
  readonly waitingPerAgent: number;
  /**
   * Scripts one tenant (the agents `tenantOf` puts together) may have waiting, all its agents
   * together: a tenant flooding through many agents, each within its own fill, had taken every
   * claim the host holds, and other tenants' scripts waited in the queue behind them. Default:
   * no bound beyond its agents'.
   */
  readonly waitingPerTenant?: number;
}

export type Leave = () => void;

type Wake = (leave: Leave | undefined) => void;

export class AgentFairShare {
  private running = 0;
  private readonly runningOf = new Map<string, number>();
  private readonly waiting = new Map<string, Wake[]>();
  /** Scripts waiting, by tenant. */
  private readonly waitingOfTenant = new Map<string, number>();
  private closed = false;
  /** Tenants with waiting scripts, in the order they are next served. */
  private readonly tenantTurn: string[] = [];
  /** Per tenant: its agents with waiting scripts, in the order they are next served. */
  private readonly agentTurn = new Map<string, string[]>();

  constructor(
    private readonly limits: FairShareLimits,
    /** The tenant of an agent (default: each agent its own). */
    private readonly tenantOf: (agent: string) => string = (agent) => agent,
  ) {
    for (const [name, value] of Object.entries(limits)) {
      if (value === undefined && name === "waitingPerTenant") continue;
      if (!Number.isInteger(value) || (value as number) < 1) throw new RangeError(`${name} must be an integer ≥ 1, got ${String(value)}`);
    }
  }

  /**
   * A slot for one of `agent`'s scripts: resolves with the function that gives it back once the
   * script may run, or with `undefined` if the share is closed first; `undefined` at once when
   * the agent, or its tenant, already has its fill of scripts waiting, or the share is closed.
   */
  enter(agent: string): Promise<Leave | undefined> | undefined {
    const queue = this.waiting.get(agent) ?? [];
    const tenant = this.tenantOf(agent);
    const tenantWaiting = this.waitingOfTenant.get(tenant) ?? 0;
    if (this.closed || queue.length >= this.limits.waitingPerAgent || tenantWaiting >= (this.limits.waitingPerTenant ?? Number.POSITIVE_INFINITY)) return undefined;
    return new Promise((resolve) => {
      if (queue.length === 0) {
        this.waiting.set(agent, queue);
        const agents = this.agentTurn.get(tenant);
        if (agents === undefined) {
          this.agentTurn.set(tenant, [agent]);
          this.tenantTurn.push(tenant);
        } else agents.push(agent);
      }
      queue.push(resolve);
      this.waitingOfTenant.set(tenant, tenantWaiting + 1);
      this.grant();
    });
  }

  /** Stops granting: every waiting script is told `undefined` (its item goes back to the queue). */
  close(): void {
    this.closed = true;
    this.tenantTurn.length = 0;
    this.agentTurn.clear();
    this.waitingOfTenant.clear();
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

  /**
   * Free slots go round-robin to the tenants with scripts waiting, and within a tenant
   * round-robin to its agents; an agent at its own limit keeps its place, and a tenant all of
   * whose waiting agents are at theirs is passed over until one of their scripts ends.
   */
  private grant(): void {
    if (this.closed) return;
    let scanned = 0;
    while (this.running < this.limits.total && scanned < this.tenantTurn.length) {
      const tenant = this.tenantTurn.shift() as string;
      const agents = this.agentTurn.get(tenant) as string[];
      const agent = this.nextAgent(agents);
      if (agent === undefined) {
        this.tenantTurn.push(tenant);
        scanned++;
        continue;
      }
      scanned = 0;
      const queue = this.waiting.get(agent) as Wake[];
      const wake = queue.shift() as Wake;
      if (queue.length === 0) this.waiting.delete(agent);
      else agents.push(agent);
      if (agents.length === 0) this.agentTurn.delete(tenant);
      else this.tenantTurn.push(tenant);
      const tenantWaiting = (this.waitingOfTenant.get(tenant) ?? 1) - 1;
      if (tenantWaiting === 0) this.waitingOfTenant.delete(tenant);
      else this.waitingOfTenant.set(tenant, tenantWaiting);
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

  /** The first of `agents` (taken off the turn) below its own limit; those at it go to the back. */
  private nextAgent(agents: string[]): string | undefined {
    for (let scanned = 0; scanned < agents.length; scanned++) {
      const agent = agents.shift() as string;
      if ((this.runningOf.get(agent) ?? 0) < this.limits.perAgent) return agent;
      agents.push(agent);
    }
    return undefined;
  }
}
