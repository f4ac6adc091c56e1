// Regression (chaos soak, issue 16): a script work item whose stream read ended before the
// script's request (a read lagging the item after a NATS failover) was acked as "not found",
// and the script never ran; its agent waited forever. Such a read now says not-visible and the
// host tries the item again.

import { MemoryEventStore } from "@agentrt/streams";
import { describe, expect, it } from "vitest";
import { ScriptRunner, type ScriptRunnerDeps } from "../src/script-runner.ts";
import { testLogger } from "@agentrt/testing";

function runnerOver(store: MemoryEventStore): ScriptRunner {
  // Only the store and the logger are reached before a script's request is found.
  return new ScriptRunner({ store, logger: testLogger() } as unknown as ScriptRunnerDeps);
}

describe("a script work item read before its request is visible", () => {
  it("is not-visible while the read ends before the requested offset, not-found once it does not", async () => {
    const store = new MemoryEventStore();
    await store.append("/agents/a", [{ type: "agent/created", payload: {} }]);
    const runner = runnerOver(store);
    expect(await runner.handle("/agents/a", "agent-output:5", 5)).toBe("not-visible");
    // Without the offset (an older item) or with the stream past it, a missing request is not found.
    expect(await runner.handle("/agents/a", "agent-output:5")).toBe("not-found");
    expect(await runner.handle("/agents/a", "agent-output:1", 1)).toBe("not-found");
  });
});

describe("a second delivery of an item the host is still handling", () => {
  it("decides again from the stream once the first attempt ends, instead of answering already-settled unseen", async () => {
    // Regression (chaos soak): the first attempt's read failed (a NATS node down) while a
    // redelivery of the same item waited behind it; the redelivery was acked as settled, the
    // failed attempt's nak went to a delivery that was no longer live, and the script never ran.
    const store = new MemoryEventStore();
    await store.append("/agents/a", [{ type: "agent/created", payload: {} }]);
    let reads = 0;
    let failFirst!: (error: Error) => void;
    const flaky = Object.create(store) as MemoryEventStore;
    flaky.read = (path: string) => (++reads === 1 ? new Promise((_, reject) => (failFirst = reject)) : store.read(path));
    const runner = runnerOver(flaky);
    const first = runner.handle("/agents/a", "agent-output:5", 5);
    const second = runner.handle("/agents/a", "agent-output:5", 5);
    failFirst(new Error("NATS is unavailable (timeout)"));
    await expect(first).rejects.toThrow("unavailable");
    // The request is still not on the stream as read: try the item again, never ack it.
    expect(await second).toBe("not-visible");
    expect(reads).toBe(2);
  });
});
