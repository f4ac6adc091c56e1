// Each tenant's budget of listed entries on this host (itx.kv.list, itx.files.list). A listing
// reads up to 10 000 entries from NATS for one cheap call, and the host's NATS connection and
// event loop are shared by every tenant: one agent listing its 10 000 files in a loop, eight at
// a time, took another tenant's two-call kv script from 70 ms to 17 s (red-team). Tokens refill
// at `entriesPerSecond` up to `burst` (one full listing); a listing starts only while its tenant
// is not in debt, and is charged what it listed once done, so a tenant that lists more than the
// rate waits for its debt, and the others' calls do not. An agent's listings also run one at a
// time. `ListingBudget` is the pure count (time passed in); `ListingGate` waits on it.

import { ITX_LIST_MAX_ENTRIES, ItxListTooLongError } from "./agent-storage.ts";
import { PerAgentQueue } from "./usage-meter.ts";

/** What one listing costs besides its entries: a consumer made, read and removed on the server. */
export const LISTING_COST_ENTRIES = 100;

export interface ListingBudgetLimits {
  /** Entries a tenant may list per second, on average. */
  readonly entriesPerSecond: number;
  /** Entries a tenant with a full budget may list at once. */
  readonly burst: number;
}

/**
 * 10 000 entries a second per tenant, and one full listing at once. A warm listing of 10 000
 * entries costs the host's thread about 0.1 s (and the sandbox as much again to take it in), so
 * this holds one tenant to about a tenth of the host; at 20 000 another tenant's script took up
 * to 3.4 times as long beside a flood on a busy two-core machine.
 */
export const DEFAULT_LISTING_BUDGET: ListingBudgetLimits = { entriesPerSecond: 10_000, burst: ITX_LIST_MAX_ENTRIES + LISTING_COST_ENTRIES };

/** Tenants whose budget is counted before full ones are forgotten (a full budget is no entry). */
const TENANTS_KEPT = 1_000;

/** A token bucket per tenant; a tenant not in the map has a full budget. */
export class ListingBudget {
  private readonly balances = new Map<string, { tokens: number; atMs: number }>();

  constructor(readonly limits: ListingBudgetLimits = DEFAULT_LISTING_BUDGET) {
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isFinite(value) || value <= 0) throw new RangeError(`listing budget: ${name} must be a positive number, got ${String(value)}`);
    }
  }

  /** The tenant's tokens at `nowMs` (negative: in debt). */
  tokens(tenant: string, nowMs: number): number {
    const balance = this.balances.get(tenant);
    if (balance === undefined) return this.limits.burst;
    const refilled = balance.tokens + (Math.max(0, nowMs - balance.atMs) * this.limits.entriesPerSecond) / 1000;
    return Math.min(this.limits.burst, refilled);
  }

  /** How long a listing of `tenant` waits at `nowMs` before it may start: 0 unless the tenant is in debt. */
  waitMs(tenant: string, nowMs: number): number {
    const tokens = this.tokens(tenant, nowMs);
    return tokens >= 0 ? 0 : Math.ceil((-tokens * 1000) / this.limits.entriesPerSecond);
  }

  /** Charges a listing of `entries` to `tenant` at `nowMs`: past its tokens it goes into debt. */
  charge(tenant: string, entries: number, nowMs: number): void {
    const tokens = this.tokens(tenant, nowMs) - entries - LISTING_COST_ENTRIES;
    this.balances.delete(tenant);
    this.balances.set(tenant, { tokens, atMs: nowMs });
    if (this.balances.size > TENANTS_KEPT) this.forgetFull(nowMs);
  }

  /** Tenants counted now (those whose budget is not known full). */
  countedTenants(): number {
    return this.balances.size;
  }

  private forgetFull(nowMs: number): void {
    for (const tenant of [...this.balances.keys()]) if (this.tokens(tenant, nowMs) >= this.limits.burst) this.balances.delete(tenant);
  }
}

export interface ListingGateOptions {
  readonly budget?: ListingBudget;
  /** The tenant of an agent (default: each agent its own). */
  readonly tenantOf?: (agentPath: string) => string;
  readonly nowMs?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Runs an agent's listings one at a time, each once its tenant is out of debt, and charges what they listed. */
export class ListingGate {
  private readonly budget: ListingBudget;
  private readonly tenantOf: (agentPath: string) => string;
  private readonly nowMs: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly queue = new PerAgentQueue();

  constructor(options: ListingGateOptions = {}) {
    this.budget = options.budget ?? new ListingBudget();
    this.tenantOf = options.tenantOf ?? ((agentPath) => agentPath);
    this.nowMs = options.nowMs ?? (() => performance.now());
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  run<T>(agentPath: string, list: () => Promise<readonly T[]>): Promise<readonly T[]> {
    const tenant = this.tenantOf(agentPath);
    return this.queue.run(agentPath, async () => {
      for (let waitMs = this.budget.waitMs(tenant, this.nowMs()); waitMs > 0; waitMs = this.budget.waitMs(tenant, this.nowMs())) await this.sleep(waitMs);
      let listed: readonly T[];
      try {
        listed = await list();
      } catch (error) {
        // A listing refused for its length read the most entries one may.
        this.budget.charge(tenant, error instanceof ItxListTooLongError ? ITX_LIST_MAX_ENTRIES : 0, this.nowMs());
        throw error;
      }
      this.budget.charge(tenant, listed.length, this.nowMs());
      return listed;
    });
  }
}
