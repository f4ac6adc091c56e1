// Regression (red-team): a script finished with a real result while NATS was down for 16 s; its
// settlement's retries gave up after 12 s and the work item went back to the queue; when it came
// back, the same host found the script started by itself and not running here, and settled it
// `orphaned` ("the host stopped; NOT re-run"): the result was lost and the model told something
// false. The host now keeps a settlement it could not store and stores it on the item's return.

import { AgentRuntimeError, type AgentEvent } from "@agentrt/contract";
import { MemoryEventStore } from "@agentrt/streams";
import { testLogger } from "@agentrt/testing";
import { describe, expect, it } from "vitest";
import { DEFAULT_SCRIPT_LIMITS, type RunLiveness, ScriptRunner, type ScriptRunnerDeps } from "../src/script-runner.ts";

const PATH = "/agents/kept";
const EXECUTION = "agent-output:2";

describe("a settlement that could not be stored", () => {
  it("given NATS down past every retry of a finished script's settlement, when its item comes back to the same host, then the real result is stored, not orphaned", async () => {
    const memory = new MemoryEventStore();
    await memory.append(PATH, [{ type: "agent/created", payload: {} }]);
    const expiresAt = new Date(Date.now() + 120_000).toISOString();
    const requested = (await memory.append(PATH, [{ type: "capability-host/script-run-requested", payload: { code: "return 42", executionId: EXECUTION, expiresAt } }])).events[0]!.offset;
    // NATS goes down while the script runs: every append fails as unavailable, and the clock
    // jumps with each look at it, so the settlement's retry budget runs out at once.
    let down = false;
    let skewMs = 0;
    const store = Object.create(memory) as MemoryEventStore;
    store.append = async (...args: Parameters<MemoryEventStore["append"]>) => {
      if (down) throw new AgentRuntimeError("unavailable", "NATS is unavailable", { retryable: true });
      return memory.append(...args);
    };
    const liveness: RunLiveness = {
      recordRun: async () => undefined,
      runnerOf: async () => "self",
      forgetRun: async () => undefined,
      currentGeneration: () => 0,
      holds: async () => true,
    };
    let runs = 0;
    const deps: Partial<ScriptRunnerDeps> = {
      store,
      liveness,
      logger: testLogger(),
      limits: DEFAULT_SCRIPT_LIMITS,
      now: () => Date.now() + (down ? (skewMs += 60_000) : skewMs),
      wrap: (code) => code,
      hostCalls: () => (() => Promise.resolve(undefined)) as unknown as ReturnType<ScriptRunnerDeps["hostCalls"]>,
      files: {} as ScriptRunnerDeps["files"],
      check: (async () => ({ kind: "ok", durationMs: 1, compiled: { ok: true, javascript: "return 42" } })) as unknown as ScriptRunnerDeps["check"],
      sandbox: {
        run: (async () => {
          runs++;
          down = true;
          return { kind: "returned", value: 42, startMs: 0, runMs: 0 };
        }) as unknown as ScriptRunnerDeps["sandbox"]["run"],
      } as ScriptRunnerDeps["sandbox"],
    };
    const runner = new ScriptRunner(deps as ScriptRunnerDeps);

    // When the settlement cannot be stored, the handling fails (its item goes back to the queue)
    await expect(runner.handle(PATH, EXECUTION, requested)).rejects.toThrow(/unavailable/);
    // And NATS is back when the item returns to this host
    down = false;
    expect(await runner.handle(PATH, EXECUTION, requested)).toBe("succeeded");

    // Then the script ran once and its real result is the one settlement
    expect(runs).toBe(1);
    const settled = (await memory.read(PATH)).filter((e): e is Extract<AgentEvent, { type: "capability-host/script-run-settled" }> => e.type === "capability-host/script-run-settled");
    expect(settled).toHaveLength(1);
    expect(settled[0]!.payload.settlement).toEqual({ status: "succeeded", result: 42 });
  });
});
