// Given the driver's fair share of slots in front of a request's model call, when a request
// finds no slot, waits for one, or the driver stops while it waits, then the run ends without
// calling the model where it must, and a request settled during the wait is not driven.

import { CONTRACT_VERSION } from "@agentrt/contract";
import { AgentFairShare } from "@agentrt/service-kit";
import { MemoryEventStore } from "@agentrt/streams";
import { birthEvents, testLogger, userMessage } from "@agentrt/testing";
import { describe, expect, it } from "vitest";
import type { DriverMetrics } from "../src/metrics.ts";
import type { ModelClient } from "../src/model-client.ts";
import { busyRetryMs, driverSlotShare } from "../src/driver.ts";
import { RequestRunner, type RequestRunnerDeps } from "../src/request-runner.ts";
import { RequestStop, RunningRequests } from "../src/running-requests.ts";

const PATH = "/agents/t/a";

async function openRequest(store: MemoryEventStore): Promise<number> {
  await store.append(PATH, [...birthEvents(), userMessage("hello")]);
  const result = await store.append(PATH, [{ type: "agent/llm-request-requested", payload: { model: "openai/m", expiresAt: new Date(Date.now() + 600_000).toISOString(), contractVersion: CONTRACT_VERSION } }]);
  return result.events[0]!.offset;
}

/** A runner whose model counts its calls (and never answers: these runs must not reach it). */
function runnerWith(store: MemoryEventStore, slot: RequestRunnerDeps["slot"], maxSlotWaitMs?: number, running = new RunningRequests()): { runner: RequestRunner; calls: () => number } {
  let calls = 0;
  const model: ModelClient = {
    stream: () => {
      calls++;
      throw new Error("the model was called");
    },
  } as unknown as ModelClient;
  // Only the store, the logger, the running table and the slot are reached before the model.
  const runner = new RequestRunner({ store, running, logger: testLogger("test"), nowMs: Date.now, metrics: {} as DriverMetrics, providers: {}, modelFor: () => model, slot, ...(maxSlotWaitMs === undefined ? {} : { maxSlotWaitMs }) } as unknown as RequestRunnerDeps);
  return { runner, calls: () => calls };
}

describe("a request's model call behind the driver's slots", () => {
  it("given its group has its fill waiting, when it runs, then it ends busy without calling the model", async () => {
    const store = new MemoryEventStore();
    const R = await openRequest(store);
    const asked: Array<[string, string]> = [];
    const { runner, calls } = runnerWith(store, (path, model) => {
      asked.push([path, model]);
      return undefined;
    });
    expect(await runner.run(PATH, R)).toBe("busy");
    expect(asked).toEqual([[PATH, "openai/m"]]);
    expect(calls()).toBe(0);
  });

  it("given it waits for a slot, when its request is settled meanwhile, then it reads the stream again and drives nothing", async () => {
    const store = new MemoryEventStore();
    const R = await openRequest(store);
    const share = new AgentFairShare({ total: 1, perAgent: 1, waitingPerAgent: 1 });
    const holder = (await share.enter("someone else"))!;
    const { runner, calls } = runnerWith(store, () => share.enter(PATH));
    const run = runner.run(PATH, R);
    await new Promise((resolve) => setTimeout(resolve, 10));
    await store.append(PATH, [{ type: "agent/llm-request-settled", payload: { requestOffset: R, result: { status: "cancelled", reason: "expired" } } }]);
    holder();
    expect(await run).toBe("already-settled");
    expect(calls()).toBe(0);
    // And its slot was given back
    expect(share.runningCount()).toBe(0);
  });

  it("given it waits for a slot, when the driver stops, then it ends shutdown (its item goes back to the queue at once)", async () => {
    const store = new MemoryEventStore();
    const R = await openRequest(store);
    const share = new AgentFairShare({ total: 1, perAgent: 1, waitingPerAgent: 1 });
    await share.enter("someone else");
    const { runner, calls } = runnerWith(store, () => share.enter(PATH));
    const run = runner.run(PATH, R);
    await new Promise((resolve) => setTimeout(resolve, 10));
    share.close();
    expect(await run).toBe("shutdown");
    expect(calls()).toBe(0);
  });

  it("given it waits for a slot, when an interrupt comes, then the running table answers it with no text, the run ends interrupted, and the slot granted later is given back", async () => {
    const store = new MemoryEventStore();
    const R = await openRequest(store);
    const share = new AgentFairShare({ total: 1, perAgent: 1, waitingPerAgent: 1 });
    const holder = (await share.enter("someone else"))!;
    const running = new RunningRequests();
    const { runner, calls } = runnerWith(store, () => share.enter(PATH), undefined, running);
    const run = runner.run(PATH, R);
    await new Promise((resolve) => setTimeout(resolve, 10));
    // The waiting request is in the table (an interrupt finds it), but runs no model call
    expect(running.waitingForSlot()).toEqual([{ streamPath: PATH, requestOffset: R }]);
    expect(running.size).toBe(0);
    const waiting = running.get(PATH, R)!;
    expect(waiting.partialText()).toBe("");
    waiting.stop(new RequestStop("interrupted", "interrupted by the user's next message"));
    expect(await run).toBe("interrupted");
    expect(calls()).toBe(0);
    expect(running.get(PATH, R)).toBeUndefined();
    holder();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(share.runningCount()).toBe(0);
  });

  it("given no slot within the wait bound, when it times out, then it ends busy without calling the model, and the slot granted later is given back", async () => {
    // Review: a request waiting without bound outlived the reducer's redrive, and another driver that took the redriven item called the model too.
    const store = new MemoryEventStore();
    const R = await openRequest(store);
    const share = new AgentFairShare({ total: 1, perAgent: 1, waitingPerAgent: 1 });
    const holder = (await share.enter("someone else"))!;
    const { runner, calls } = runnerWith(store, () => share.enter(PATH), 50);
    expect(await runner.run(PATH, R)).toBe("busy");
    expect(calls()).toBe(0);
    holder();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(share.runningCount()).toBe(0);
    // And the next one finds the slot free
    expect(await share.enter("another")).toBeDefined();
  });
});

describe("the driver's slot share", () => {
  it("given spare slots 0, then the concurrency is a hard bound; by default half as many again serve groups below two", async () => {
    const hard = driverSlotShare(2, 2, 0);
    const soft = driverSlotShare(2, 2);
    for (const { share, keyOf } of [hard, soft]) {
      for (const agent of ["/agents/a/1", "/agents/a/2"]) await share.enter(keyOf(agent, "openai/m"));
      void share.enter(keyOf("/agents/b/1", "openai/m"));
    }
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(hard.share.runningCount()).toBe(2);
    expect(soft.share.runningCount()).toBe(3);
    expect([hard.claims, soft.claims]).toEqual([3, 4]);
    expect(() => driverSlotShare(2, 2, -1)).toThrow(/spare slots must be an integer ≥ 0, got -1/);
  });

  it("given one tenant's agents on two providers, then they are two groups (a slow provider does not hold the other's turns)", async () => {
    const { share, keyOf } = driverSlotShare(2, 2, 1);
    for (const agent of ["/agents/a/1", "/agents/a/2"]) await share.enter(keyOf(agent, "slow/m"));
    const healthy = share.enter(keyOf("/agents/a/3", "openai/m"));
    const sameSlow = share.enter(keyOf("/agents/a/4", "slow/m"));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(share.tenantRunningCount(JSON.stringify(["openai", "/agents/a"]))).toBe(1);
    expect(share.tenantRunningCount(JSON.stringify(["slow", "/agents/a"]))).toBe(2);
    void healthy;
    void sameSlow;
  });

  it("given an item busy again and again, then its next delivery waits longer each time, up to the bound", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map(busyRetryMs)).toEqual([250, 500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000]);
  });
});
