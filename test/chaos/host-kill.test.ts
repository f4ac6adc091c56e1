// Chaos: the capability host is SIGKILLed while a script runs (after its started event, with
// a side effect already made), and three scripts are queued behind it. After the restart the
// running script settles `orphaned` exactly once and is never run again (its side effect
// happened once), and every queued script still runs.

import type { AgentEvent } from "@agentrt/contract";
import { waitFor, waitForEvent } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type System, startSystem } from "../support/system.ts";

let system: System;
beforeAll(async () => {
  system = await startSystem({
    reducers: 1,
    drivers: 0,
    hosts: 1,
    env: { SCRIPT_CONCURRENCY: "1", SCRIPT_WORK_ACK_WAIT_MS: "2000" },
  });
});
afterAll(async () => system?.stop());

const requested = (executionId: string, code: string) => ({
  type: "capability-host/script-run-requested" as const,
  payload: { code, executionId, expiresAt: new Date(Date.now() + 5 * 60_000).toISOString() },
});

describe("chaos: the capability host dies mid-script", () => {
  it("settles the running script orphaned once, never re-runs it, and runs the queued ones", async () => {
    const path = "/agents/chaos/host";
    await system.store.append(path, [{ type: "agent/created", payload: {} }, { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 60_000 } } }]);
    const long = `await itx.agent.append({ type: "agent/summary-updated", payload: { activity: "side effect of the long script" } });
const end = Date.now() + 20000;
while (Date.now() < end) {}
return "finished";`;
    await system.store.append(path, [requested("api:long", long)]);
    const started = await waitForEvent(system.store, path, "capability-host/script-run-started", (e) => e.payload.executionId === "api:long", 60_000);
    await waitForEvent(system.store, path, "agent/summary-updated", (e) => "activity" in e.payload && e.payload.activity === "side effect of the long script", 30_000);
    await system.store.append(path, [requested("api:q1", "return 1;"), requested("api:q2", "return 2;"), requested("api:q3", "return 3;")]);

    const host = system.processes.byService("capability-host")[0]!;
    await host.signal("SIGKILL");
    const killedAt = Date.now();
    host.start();
    await host.waitReady(120_000);

    await waitFor(
      async () => (await system.store.read(path)).filter((e) => e.type === "capability-host/script-run-settled").length === 4,
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    // Give a wrongly re-driven long script time to make its side effect again.
    await new Promise((r) => setTimeout(r, 3000));
    const events = await system.store.read(path);
    const settled = (id: string) => events.filter((e): e is AgentEvent & { type: "capability-host/script-run-settled" } => e.type === "capability-host/script-run-settled" && e.payload.executionId === id);
    const sideEffects = events.filter((e) => e.type === "agent/summary-updated" && "activity" in e.payload && e.payload.activity === "side effect of the long script").length;
    const startedLong = events.filter((e) => e.type === "capability-host/script-run-started" && e.payload.executionId === "api:long").length;
    const figures = {
      kills: 1,
      orphanedSettlements: settled("api:long").length,
      longStarts: startedLong,
      sideEffects,
      queuedSettled: ["api:q1", "api:q2", "api:q3"].filter((id) => settled(id)[0]?.payload.settlement.status === "succeeded").length,
      recoveryMs: Date.parse(settled("api:long")[0]!.createdAt) - killedAt,
      startedOffset: started.offset,
    };
    process.stdout.write(`chaos/host-kill ${JSON.stringify(figures)}\n`);
    expect(settled("api:long")).toHaveLength(1);
    expect(settled("api:long")[0]!.payload.settlement).toEqual({
      status: "failed",
      failureKind: "orphaned",
      phase: "recovery",
      executionMayHaveOccurred: true,
      cancellation: "external-work-may-continue",
      error: expect.any(String),
    });
    expect(startedLong).toBe(1);
    expect(sideEffects).toBe(1);
    expect(figures.queuedSettled).toBe(3);
  });
});
