// Regression (chaos soak, issue 16, audit rule script-lifecycle-order): host B read the stream,
// spent 38 s in its check, and meanwhile host A settled the same script `typecheck` (its own
// check had run out of time). B's `started` append was checked against its own key only, so it
// committed after the settlement and B ran the script. `started` is now appended only onto the
// stream as last decided on; what arrived meanwhile is decided on again by the core.

import { MemoryEventStore } from "@agentrt/streams";
import { testLogger } from "@agentrt/testing";
import { describe, expect, it } from "vitest";
import { DEFAULT_SCRIPT_LIMITS, ScriptRunner, type ScriptRunnerDeps } from "../src/script-runner.ts";
import { settledKey, typecheckTimedOut } from "../src/settlements.ts";

const PATH = "/agents/a";
const EXECUTION = "agent-output:2";

async function requested(store: MemoryEventStore): Promise<number> {
  await store.append(PATH, [{ type: "agent/created", payload: {} }]);
  const expiresAt = new Date(Date.now() + 120_000).toISOString();
  const appended = await store.append(PATH, [{ type: "capability-host/script-run-requested", payload: { code: "return 1", executionId: EXECUTION, expiresAt } }]);
  return appended.events[0]!.offset;
}

/** A runner whose check lets `duringCheck` write to the stream before it answers "ok". */
function runnerWith(store: MemoryEventStore, duringCheck: () => Promise<void>, ran: string[]): ScriptRunner {
  const deps: Partial<ScriptRunnerDeps> = {
    store,
    logger: testLogger(),
    limits: DEFAULT_SCRIPT_LIMITS,
    wrap: (code) => code,
    hostCalls: () => (() => Promise.resolve(undefined)) as unknown as ReturnType<ScriptRunnerDeps["hostCalls"]>,
    files: {} as ScriptRunnerDeps["files"],
    check: (async () => {
      await duringCheck();
      return { kind: "ok", durationMs: 1, compiled: { ok: true, javascript: "return 1" } };
    }) as unknown as ScriptRunnerDeps["check"],
    sandbox: {
      run: (async (request: { agentPath: string }) => {
        ran.push(request.agentPath);
        return { kind: "returned", value: 1, startMs: 0, runMs: 0 };
      }) as unknown as ScriptRunnerDeps["sandbox"]["run"],
    } as ScriptRunnerDeps["sandbox"],
  };
  return new ScriptRunner(deps as ScriptRunnerDeps);
}

const typesOf = async (store: MemoryEventStore) => (await store.read(PATH)).map((e) => e.type);

describe("a script settled by another host while this host checks it", () => {
  it("given the settlement lands during the check, when the check passes, then nothing is started and the script does not run", async () => {
    const store = new MemoryEventStore();
    const offset = await requested(store);
    const ran: string[] = [];
    const runner = runnerWith(
      store,
      async () => {
        await store.append(PATH, [
          { type: "capability-host/script-run-settled", payload: { executionId: EXECUTION, settlement: typecheckTimedOut(2_000) }, idempotencyKey: settledKey(EXECUTION) },
        ]);
      },
      ran,
    );
    expect(await runner.handle(PATH, EXECUTION, offset)).toBe("already-settled");
    expect(ran).toEqual([]);
    expect(await typesOf(store)).toEqual(["agent/created", "capability-host/script-run-requested", "capability-host/script-run-settled"]);
  });

  it("given an unrelated event lands during the check, when the check passes, then the script starts after it and runs once", async () => {
    const store = new MemoryEventStore();
    const offset = await requested(store);
    const ran: string[] = [];
    const runner = runnerWith(
      store,
      async () => {
        await store.append(PATH, [{ type: "agents/context-added", payload: { role: "user", content: "meanwhile", actor: { type: "user", origin: "web" } } }]);
      },
      ran,
    );
    expect(await runner.handle(PATH, EXECUTION, offset)).toBe("succeeded");
    expect(ran).toEqual([PATH]);
    expect(await typesOf(store)).toEqual([
      "agent/created",
      "capability-host/script-run-requested",
      "agents/context-added",
      "capability-host/script-run-started",
      "capability-host/script-run-settled",
    ]);
  });
});
