// Fair sharing of a worker's slots between agents (the capability host's scripts, the
// llm-driver's model calls): at most `total` run at once, at most `perAgent` of them for one
// agent, and free slots go round-robin to the agents that have work waiting, so one agent's flood
// queues behind its own limit, not in front of every other agent; and above the agents, tenants
// take turns the same way, so a tenant's flood through many agents does not crowd out another
// tenant. An agent that already has `waitingPerAgent` items waiting, or whose tenant has
// `waitingPerTenant`, is refused another (its work item goes back to the queue for later), so a
// flood cannot fill the worker's claims. With `spare` slots, a tenant running fewer than its
// guaranteed few starts at once even when a flood holds every slot. With `perTenant`, a tenant
// runs at most that many at once, all its agents together, so the other slots stay free for
// other tenants.
// Pure bookkeeping: no timers, no IO.

export interface FairShareLimits {
  readonly total: number;
  readonly perAgent: number;
  readonly waitingPerAgent: number;
  /**
   * Items one tenant (the agents `tenantOf` puts together) may have waiting, all its agents
   * together: a tenant flooding through many agents, each within its own fill, had taken every
   * claim the worker holds, and other tenants' items waited in the queue behind them. Default:
   * no bound beyond its agents'.
   */
  readonly waitingPerTenant?: number;
  /**
   * Items one tenant may run at once, all its agents together: fair turns only order what
   * waits, and per-agent limits hold one agent, so a tenant's two agents each running two long
   * scripts held all four of the capability host's slots, and another tenant's `return 1` waited
   * 37 s for one (red-team). Default: no bound beyond `total`.
   */
  readonly perTenant?: number;
  /**
   * Slots past `total`, at most `extra` of them, for a tenant that runs fewer than `perTenant`:
   * fair turns only order what waits, so work that holds its slots for long (a provider that
   * trickles its reply until the request expires) held every slot, and another tenant waited
   * behind it for minutes (red-team: 9 m 26 s). Default: none.
   */
  readonly spare?: { readonly perTenant: number; readonly extra: number };
}

export type Leave = () => void;

type Wake = (leave: Leave | undefined) => void;

export class AgentFairShare {
  private running = 0;
  private readonly runningOf = new Map<string, number>();
  /** Running, by tenant (kept only with spare slots or a per-tenant limit). */
  private readonly runningOfTenant = new Map<string, number>();
  private readonly waiting = new Map<string, Wake[]>();
  /** Items waiting, by tenant. */
  private readonly waitingOfTenant = new Map<string, number>();
  private closed = false;
  /** Tenants with work waiting, in the order they are next served. */
  private readonly tenantTurn: string[] = [];
  /** Per tenant: its agents with work waiting, in the order they are next served. */
  private readonly agentTurn = new Map<string, string[]>();

  constructor(
    private readonly limits: FairShareLimits,
    /** The tenant of an agent (default: each agent its own). */
    private readonly tenantOf: (agent: string) => string = (agent) => agent,
  ) {
    const { spare, ...counts } = limits;
    const checked: Array<[string, unknown]> = [
      ...Object.entries(counts),
      ...(spare === undefined ? [] : Object.entries(spare).map(([name, value]): [string, unknown] => [`spare.${name}`, value])),
    ];
    for (const [name, value] of checked) {
      if (value === undefined && (name === "waitingPerTenant" || name === "perTenant")) continue;
      if (!Number.isInteger(value) || (value as number) < 1) throw new RangeError(`${name} must be an integer ≥ 1, got ${String(value)}`);
    }
  }

  /**
   * A slot for one of `agent`'s items: resolves with the function that gives it back once the
   * item may run, or with `undefined` once the share is closed (at once when it already is: the
   * item goes back now, not after a busy item's delay); `undefined` instead of a promise when
   * the agent, or its tenant, already has its fill of items waiting (come back later).
   */
  enter(agent: string): Promise<Leave | undefined> | undefined {
    if (this.closed) return Promise.resolve(undefined);
    const queue = this.waiting.get(agent) ?? [];
    const tenant = this.tenantOf(agent);
    const tenantWaiting = this.waitingOfTenant.get(tenant) ?? 0;
    if (queue.length >= this.limits.waitingPerAgent || tenantWaiting >= (this.limits.waitingPerTenant ?? Number.POSITIVE_INFINITY)) return undefined;
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

  /** Stops granting: every waiting item is told `undefined` (its item goes back to the queue). */
  close(): void {
    this.closed = true;
    this.tenantTurn.length = 0;
    this.agentTurn.clear();
    this.waitingOfTenant.clear();
    for (const queue of this.waiting.values()) for (const wake of queue.splice(0)) wake(undefined);
    this.waiting.clear();
  }

  /** Items running now, for one agent or in all. */
  runningCount(agent?: string): number {
    return agent === undefined ? this.running : (this.runningOf.get(agent) ?? 0);
  }

  /** Items running now for one tenant (counted only with spare slots or a per-tenant limit). */
  tenantRunningCount(tenant: string): number {
    return this.runningOfTenant.get(tenant) ?? 0;
  }

  waitingCount(agent: string): number {
    return this.waiting.get(agent)?.length ?? 0;
  }

  /**
   * Free slots go round-robin to the tenants with work waiting, and within a tenant
   * round-robin to its agents; an agent at its own limit keeps its place, and a tenant all of
   * whose waiting agents are at theirs is passed over until one of their items ends. With every
   * slot taken, only a tenant below its spare share starts, in a spare slot. A tenant at its
   * per-tenant limit keeps its place and is passed over like one whose agents are all at theirs.
   */
  private grant(): void {
    if (this.closed) return;
    const ceiling = this.limits.total + (this.limits.spare?.extra ?? 0);
    let scanned = 0;
    while (this.running < ceiling && scanned < this.tenantTurn.length) {
      const tenant = this.tenantTurn.shift() as string;
      const agents = this.agentTurn.get(tenant) as string[];
      const agent = this.mayStart(tenant) ? this.nextAgent(agents) : undefined;
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
      const counted = this.limits.spare !== undefined || this.limits.perTenant !== undefined;
      if (counted) this.runningOfTenant.set(tenant, (this.runningOfTenant.get(tenant) ?? 0) + 1);
      let left = false;
      wake(() => {
        if (left) return;
        left = true;
        this.running--;
        countDown(this.runningOf, agent);
        if (counted) countDown(this.runningOfTenant, tenant);
        this.grant();
      });
    }
  }

  /** The tenant is below its own limit, and a slot is free or it is below its spare share (the caller checks the ceiling). */
  private mayStart(tenant: string): boolean {
    const tenantRunning = this.runningOfTenant.get(tenant) ?? 0;
    if (tenantRunning >= (this.limits.perTenant ?? Number.POSITIVE_INFINITY)) return false;
    if (this.running < this.limits.total) return true;
    const spare = this.limits.spare;
    return spare !== undefined && tenantRunning < spare.perTenant;
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

function countDown(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left === 0) counts.delete(key);
  else counts.set(key, left);
}
