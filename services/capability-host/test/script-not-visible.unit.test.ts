// Regression (chaos soak, issue 16): a script work item whose stream read ended before the
// script's request (a read lagging the item after a NATS failover) was acked as "not found",
// and the script never ran; its agent waited forever. Such a read now says not-visible and the
// host tries the item again.

import { MemoryEventStore } from "@agentrt/streams";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { ScriptRunner, type ScriptRunnerDeps } from "../src/script-runner.ts";

function runnerOver(store: MemoryEventStore): ScriptRunner {
  // Only the store and the logger are reached before a script's request is found.
  return new ScriptRunner({ store, logger: pino({ level: "silent" }) } as unknown as ScriptRunnerDeps);
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
