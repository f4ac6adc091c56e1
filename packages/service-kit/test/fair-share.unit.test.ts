// Given scripts of several agents entering a worker's fair share, when slots free up, then no
// agent runs more than its own limit, free slots go round-robin to agents that wait, and an
// agent with its fill of waiting scripts is refused another (its item goes back to the queue).

import { describe, expect, it } from "vitest";
import { AgentFairShare, type Leave } from "../src/fair-share.ts";

/** Enters and records when each script is let in. */
function enterAll(share: AgentFairShare, agents: string[], log: string[]): Array<Promise<Leave | undefined> | undefined> {
  return agents.map((agent, i) => {
    const entering = share.enter(agent);
    void entering?.then(() => log.push(`${agent}${i}`));
    return entering;
  });
}
const flush = () => new Promise((r) => setTimeout(r, 0));

describe("fair share of script slots", () => {
  it("given an agent at its own limit, when another agent enters, then it runs at once", async () => {
    const share = new AgentFairShare({ total: 4, perAgent: 2, waitingPerAgent: 10 });
    const log: string[] = [];
    enterAll(share, ["a", "a", "a", "a", "a", "b"], log);
    await flush();
    expect(log).toEqual(["a0", "a1", "b5"]);
    expect(share.runningCount("a")).toBe(2);
    expect(share.waitingCount("a")).toBe(3);
    expect(share.runningCount()).toBe(3);
  });

  it("given every slot busy, when slots free, then waiting agents are served round-robin", async () => {
    const share = new AgentFairShare({ total: 2, perAgent: 2, waitingPerAgent: 10 });
    const log: string[] = [];
    const entered = enterAll(share, ["a", "a", "a", "a", "b", "b", "c"], log);
    await flush();
    expect(log).toEqual(["a0", "a1"]);
    (await entered[0]!)!();
    await flush();
    (await entered[1]!)!();
    await flush();
    expect(log).toEqual(["a0", "a1", "a2", "b4"]);
    (await entered[2]!)!();
    await flush();
    expect(log.at(-1)).toBe("c6");
  });

  it("given an agent with its fill waiting, when it enters again, then it is refused until one of its scripts runs", async () => {
    const share = new AgentFairShare({ total: 4, perAgent: 1, waitingPerAgent: 2 });
    const log: string[] = [];
    const entered = enterAll(share, ["a", "a", "a"], log);
    expect(entered.map((e) => e !== undefined)).toEqual([true, true, true]);
    expect(share.enter("a")).toBeUndefined();
    expect(share.enter("b")).toBeDefined();
    (await entered[0]!)!();
    await flush();
    expect(log).toEqual(["a0", "a1"]);
    expect(share.enter("a")).toBeDefined();
  });

  it("given one tenant flooding through many agents, when slots free, then tenants take turns before agents do", async () => {
    // Given tenant /t/a's five agents each with a script waiting, then tenant /t/b's one agent
    const share = new AgentFairShare({ total: 1, perAgent: 1, waitingPerAgent: 2 }, (agent) => agent.split("/").slice(0, 3).join("/"));
    const agents = ["/t/a/1", "/t/a/2", "/t/a/3", "/t/a/4", "/t/a/5", "/t/b/1", "/t/b/1"];
    const log: string[] = [];
    const entered = agents.map((agent) => {
      const entering = share.enter(agent);
      void entering?.then((leave) => {
        log.push(agent);
        // Each script ends as soon as it starts: the next free slot is given at once
        setTimeout(() => leave?.(), 0);
      });
      return entering;
    });
    expect(entered.every((e) => e !== undefined)).toBe(true);
    for (let i = 0; i < 20; i++) await flush();
    // Then the tenants alternate while both wait (/t/a was in turn first): /t/b's two scripts run
    // third and fifth, not after all five of /t/a's as agents taking turns had them
    expect(log).toEqual(["/t/a/1", "/t/a/2", "/t/b/1", "/t/a/3", "/t/b/1", "/t/a/4", "/t/a/5"]);
  });

  it("given a tenant with its fill of scripts waiting across its agents, when another of its agents enters, then it is refused; another tenant is not", async () => {
    const share = new AgentFairShare({ total: 1, perAgent: 1, waitingPerAgent: 2, waitingPerTenant: 3 }, (agent) => agent.split("/").slice(0, 3).join("/"));
    const log: string[] = [];
    // One runs, three wait: the tenant's fill
    const entered = enterAll(share, ["/t/a/1", "/t/a/2", "/t/a/3", "/t/a/4"], log);
    await flush();
    expect(entered.every((e) => e !== undefined)).toBe(true);
    expect(share.enter("/t/a/5")).toBeUndefined();
    expect(share.enter("/t/b/1")).toBeDefined();
    // Once one of its waiting scripts runs, the tenant may queue another
    (await entered[0]!)!();
    await flush();
    expect(log).toEqual(["/t/a/10", "/t/a/21"]);
    expect(share.enter("/t/a/5")).toBeDefined();
  });

  it("given one tenant holding every slot, when another tenant enters, then it starts in a spare slot, up to its guaranteed few", async () => {
    const tenantOf = (agent: string) => agent.split("/").slice(0, 3).join("/");
    const share = new AgentFairShare({ total: 2, perAgent: 1, waitingPerAgent: 2, spare: { perTenant: 2, extra: 3 } }, tenantOf);
    const log: string[] = [];
    // Given /t/a's two agents holding both slots (a provider trickling their replies) and a third waiting
    const flood = enterAll(share, ["/t/a/1", "/t/a/2", "/t/a/3"], log);
    await flush();
    expect(log).toEqual(["/t/a/10", "/t/a/21"]);
    // When /t/b's agents enter, then two of them start at once in spare slots; the third waits
    const other = enterAll(share, ["/t/b/1", "/t/b/2", "/t/b/3"], log);
    await flush();
    expect(log).toEqual(["/t/a/10", "/t/a/21", "/t/b/10", "/t/b/21"]);
    expect(share.runningCount()).toBe(4);
    expect(share.tenantRunningCount("/t/b")).toBe(2);
    // And /t/a, past its share, does not take a spare slot for its waiting agent
    expect(share.runningCount("/t/a/3")).toBe(0);
    // When /t/c enters, then it takes the last spare slot; /t/d finds none left (total + extra)
    const third = enterAll(share, ["/t/c/1", "/t/d/1"], log);
    await flush();
    expect(log.at(-1)).toBe("/t/c/10");
    expect(share.runningCount()).toBe(5);
    // When one of the flood's slots ends, then the tenants below their share take the slot in
    // turn: /t/a itself, now running one, before /t/d
    (await flood[0]!)!();
    await flush();
    expect(log.at(-1)).toBe("/t/a/32");
    expect(share.runningCount()).toBe(5);
    // When two of /t/b's end, then /t/b's waiting agent and /t/d start, back at the ceiling
    (await other[0]!)!();
    (await other[1]!)!();
    await flush();
    expect(log.slice(-2).sort()).toEqual(["/t/b/32", "/t/d/11"]);
    expect(share.runningCount()).toBe(5);
    expect(await Promise.all(third.map((entering) => entering !== undefined))).toEqual([true, true]);
  });

  it("given no spare slots, when one tenant holds every slot, then another waits (the rule the spare slots change)", async () => {
    const tenantOf = (agent: string) => agent.split("/").slice(0, 3).join("/");
    const share = new AgentFairShare({ total: 2, perAgent: 1, waitingPerAgent: 2 }, tenantOf);
    const log: string[] = [];
    enterAll(share, ["/t/a/1", "/t/a/2", "/t/b/1"], log);
    await flush();
    expect(log).toEqual(["/t/a/10", "/t/a/21"]);
    expect(share.tenantRunningCount("/t/a")).toBe(0);
  });

  it("given one tenant at its per-tenant limit, when another tenant enters, then it starts in a slot the first could not take", async () => {
    const tenantOf = (agent: string) => agent.split("/").slice(0, 3).join("/");
    const share = new AgentFairShare({ total: 4, perAgent: 2, waitingPerAgent: 2, perTenant: 2 }, tenantOf);
    const log: string[] = [];
    // Given /t/a's two agents with two scripts each: only two run, though four slots are free
    const flood = enterAll(share, ["/t/a/1", "/t/a/1", "/t/a/2", "/t/a/2"], log);
    await flush();
    expect(log).toEqual(["/t/a/10", "/t/a/11"]);
    expect(share.tenantRunningCount("/t/a")).toBe(2);
    expect(share.runningCount()).toBe(2);
    // When /t/b enters, then it starts at once
    enterAll(share, ["/t/b/1"], log);
    await flush();
    expect(log.at(-1)).toBe("/t/b/10");
    // When one of /t/a's ends, then its waiting agent takes the slot, still two of /t/a at once
    (await flood[0]!)!();
    await flush();
    expect(log.at(-1)).toBe("/t/a/22");
    expect(share.tenantRunningCount("/t/a")).toBe(2);
    expect(share.runningCount()).toBe(3);
  });

  it("rejects a per-tenant limit that is not a positive integer", () => {
    expect(() => new AgentFairShare({ total: 2, perAgent: 1, waitingPerAgent: 1, perTenant: 0 })).toThrow(/perTenant must be an integer ≥ 1, got 0/);
  });

  it("rejects spare limits that are not positive integers, naming the field", () => {
    expect(() => new AgentFairShare({ total: 1, perAgent: 1, waitingPerAgent: 1, spare: { perTenant: 0, extra: 2 } })).toThrow(/spare\.perTenant must be an integer ≥ 1, got 0/);
    expect(() => new AgentFairShare({ total: 1, perAgent: 1, waitingPerAgent: 1, spare: { perTenant: 1, extra: 1.5 } })).toThrow(/spare\.extra must be an integer ≥ 1, got 1.5/);
  });

  it("given a slot given back twice, then it counts once", async () => {
    const share = new AgentFairShare({ total: 1, perAgent: 1, waitingPerAgent: 5 });
    const leave = (await share.enter("a"))!;
    leave();
    leave();
    expect(share.runningCount()).toBe(0);
    const [first, second] = [share.enter("a")!, share.enter("b")!];
    await first;
    await flush();
    expect(share.runningCount()).toBe(1);
    (await first)!();
    await second;
    expect(share.runningCount("b")).toBe(1);
  });

  it("given scripts waiting, when the share closes, then they are told undefined, running ones keep their slot, and a later item is told at once that it goes back", async () => {
    const share = new AgentFairShare({ total: 1, perAgent: 1, waitingPerAgent: 5 });
    const running = await share.enter("a")!;
    const waiting = share.enter("b")!;
    share.close();
    expect(await waiting).toBeUndefined();
    // A promise (go back now), not `undefined` (busy: come back after a delay).
    const late = share.enter("c");
    expect(late).toBeInstanceOf(Promise);
    expect(await late).toBeUndefined();
    expect(share.runningCount()).toBe(1);
    running!();
    expect(share.runningCount()).toBe(0);
  });

  it("rejects limits that are not positive integers", () => {
    expect(() => new AgentFairShare({ total: 0, perAgent: 1, waitingPerAgent: 1 })).toThrow(/total must be an integer ≥ 1/);
  });
});
