// Given tenants' listings charged to their budgets, when time passes, then a tenant in debt waits
// for its debt at the budget's rate, other tenants do not wait, and an agent's listings run one at
// a time. The clock is passed in; nothing sleeps for real.

import { describe, expect, it } from "vitest";
import { ITX_LIST_MAX_ENTRIES, ItxInputError, ItxListTooLongError } from "../src/itx/agent-storage.ts";
import { DEFAULT_LISTING_BUDGET, LISTING_COST_ENTRIES, ListingBudget, ListingGate } from "../src/itx/listing-budget.ts";

describe("listing budget", () => {
  const limits = { entriesPerSecond: 1_000, burst: 2_000 };

  it("given a fresh tenant, then its first listing starts at once, whatever its size", () => {
    const budget = new ListingBudget(limits);
    expect(budget.waitMs("/t/a", 0)).toBe(0);
    expect(budget.tokens("/t/a", 0)).toBe(2_000);
  });

  it("given a tenant that listed past its tokens, when it lists again, then it waits for its debt at the rate, and another tenant does not", () => {
    const budget = new ListingBudget(limits);
    budget.charge("/t/a", 2_900 - LISTING_COST_ENTRIES, 0);
    // 2 000 tokens − 2 900 = 900 in debt: 0.9 s at 1 000 a second
    expect(budget.waitMs("/t/a", 0)).toBe(900);
    expect(budget.waitMs("/t/a", 400)).toBe(500);
    expect(budget.waitMs("/t/a", 900)).toBe(0);
    expect(budget.waitMs("/t/b", 0)).toBe(0);
  });

  it("given a tenant listing within its tokens, then it never waits; each listing costs its entries and a consumer", () => {
    const budget = new ListingBudget(limits);
    budget.charge("/t/a", 500, 0);
    expect(budget.tokens("/t/a", 0)).toBe(2_000 - 500 - LISTING_COST_ENTRIES);
    expect(budget.waitMs("/t/a", 0)).toBe(0);
    // Refilled, never past the burst
    expect(budget.tokens("/t/a", 10_000)).toBe(2_000);
  });

  it("given a tenant listing in a loop, then what it lists over a long while is the rate plus one burst", () => {
    const budget = new ListingBudget(limits);
    let now = 0;
    let listed = 0;
    while (now < 60_000) {
      now += budget.waitMs("/t/a", now);
      budget.charge("/t/a", 1_000, now);
      listed += 1_000 + LISTING_COST_ENTRIES;
    }
    expect(listed).toBeLessThanOrEqual((now / 1000) * limits.entriesPerSecond + limits.burst + 1_000 + LISTING_COST_ENTRIES);
  });

  it("defaults to 10 000 entries a second and one full listing at once", () => {
    expect(DEFAULT_LISTING_BUDGET).toEqual({ entriesPerSecond: 10_000, burst: ITX_LIST_MAX_ENTRIES + LISTING_COST_ENTRIES });
  });

  it("rejects limits that are not positive numbers, naming the field", () => {
    expect(() => new ListingBudget({ entriesPerSecond: 0, burst: 10 })).toThrow(/entriesPerSecond must be a positive number, got 0/);
    expect(() => new ListingBudget({ entriesPerSecond: 10, burst: Number.NaN })).toThrow(/burst must be a positive number, got NaN/);
  });

  it("forgets tenants whose budget has refilled once it counts many", () => {
    const budget = new ListingBudget(limits);
    for (let i = 0; i < 1_001; i++) budget.charge(`/t/${i}`, 10, 0);
    expect(budget.countedTenants()).toBe(1_001);
    budget.charge("/t/late", 10, 60_000);
    expect(budget.countedTenants()).toBe(1);
  });
});

describe("listing gate", () => {
  /** A gate on a clock the test moves: its sleeps move the clock and are recorded. */
  function gate(tenantOf = (agent: string) => agent.split("/").slice(0, 3).join("/")) {
    const clock = { now: 0 };
    const slept: number[] = [];
    const listings = new ListingGate({
      budget: new ListingBudget({ entriesPerSecond: 1_000, burst: 2_000 }),
      tenantOf,
      nowMs: () => clock.now,
      sleep: async (ms) => {
        slept.push(ms);
        clock.now += ms;
      },
    });
    return { listings, clock, slept };
  }
  const entries = (n: number) => Array.from({ length: n }, (_, i) => i);

  it("given a tenant in debt, when one of its agents lists, then it waits out the debt first; another tenant's listing does not wait", async () => {
    const { listings, slept } = gate();
    expect(await listings.run("/t/a/1", async () => entries(2_400))).toHaveLength(2_400);
    expect(slept).toEqual([]);
    // 2 000 − 2 400 − 100 = 500 in debt
    await listings.run("/t/a/2", async () => entries(1));
    expect(slept).toEqual([500]);
    await listings.run("/t/b/1", async () => entries(1));
    expect(slept).toEqual([500]);
  });

  it("given a listing refused as too long, then it is charged the most a listing reads; another error costs only the consumer", async () => {
    const { listings, slept } = gate();
    await expect(listings.run("/t/a/1", () => Promise.reject(new ItxListTooLongError("too many")))).rejects.toThrow("too many");
    // 2 000 − 10 000 − 100 = 8 100 in debt, waited out before the next listing
    await expect(listings.run("/t/a/1", () => Promise.reject(new ItxInputError("bad prefix")))).rejects.toThrow("bad prefix");
    expect(slept).toEqual([ITX_LIST_MAX_ENTRIES + LISTING_COST_ENTRIES - 2_000]);
    // which cost the consumer only: 100 in debt
    await listings.run("/t/a/1", async () => []);
    expect(slept).toEqual([ITX_LIST_MAX_ENTRIES + LISTING_COST_ENTRIES - 2_000, LISTING_COST_ENTRIES]);
  });

  it("runs one agent's listings one at a time, and different agents' at once", async () => {
    const { listings } = gate((agent) => agent);
    let running = 0;
    let most = 0;
    const list = async () => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running--;
      return entries(1);
    };
    await Promise.all(Array.from({ length: 8 }, () => listings.run("/t/a/1", list)));
    expect(most).toBe(1);
    await Promise.all([listings.run("/t/a/1", list), listings.run("/t/a/2", list)]);
    expect(most).toBe(2);
  });
});
