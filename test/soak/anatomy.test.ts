import type { AgentEvent } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { slowTurnAnatomy, turnWaits } from "./anatomy.ts";

const T0 = Date.parse("2026-12-02T06:00:00.000Z");
let offset = 0;
const at = (ms: number, type: string, payload: Record<string, unknown>): AgentEvent =>
  ({ streamPath: "/agents/t", offset: (offset += 1), type, payload, createdAt: new Date(T0 + ms).toISOString() }) as unknown as AgentEvent;

const scriptTurn = (shift: number) => [
  at(shift + 50, "agents/context-added", { role: "user", content: "hi" }),
  at(shift + 200, "agent/llm-request-requested", {}),
  at(shift + 900, "agent/llm-request-settled", { result: { status: "succeeded" } }),
  at(shift + 1_000, "capability-host/script-run-requested", { executionId: "agent-output:4" }),
  at(shift + 31_000, "capability-host/script-run-started", { executionId: "agent-output:4" }),
  at(shift + 32_500, "capability-host/script-run-settled", { executionId: "agent-output:4", settlement: { status: "succeeded" } }),
  at(shift + 33_000, "agents/context-added", { role: "assistant", content: "done" }),
];

describe("slow turn anatomy", () => {
  it("given a script turn whose script waited 30 s to start, when its waits are read, then that step carries the time", () => {
    const events = scriptTurn(0);
    const waits = turnWaits(events, { startedAt: T0, completedAt: T0 + 33_400 }, T0 + 33_400, 1_000);
    expect(waits).toEqual([
      { step: "script-run-requested → script-run-started", ms: 30_000 },
      { step: "script-run-started → script-run-settled succeeded", ms: 1_500 },
    ]);
  });

  it("given a turn never answered, when its waits are read, then the wait after its last event names it", () => {
    const events = scriptTurn(0).slice(0, 4);
    const waits = turnWaits(events, { startedAt: T0 }, T0 + 90_000, 1_000);
    expect(waits).toEqual([{ step: "script-run-requested → (never answered)", ms: 89_000 }]);
  });

  it("given events outside a turn's window, when its waits are read, then they do not count", () => {
    const events = [...scriptTurn(0), ...scriptTurn(60_000)];
    const waits = turnWaits(events, { startedAt: T0 + 60_000, completedAt: T0 + 93_100 }, T0 + 93_100, 1_000);
    expect(waits.map((w) => w.step)).toEqual(["script-run-requested → script-run-started", "script-run-started → script-run-settled succeeded"]);
  });

  it("given two slow turns, when summed, then the steps are ordered by total time with count and max", () => {
    const a = scriptTurn(0);
    const b = scriptTurn(100_000);
    const lines = slowTurnAnatomy([
      { events: a, turn: { startedAt: T0, completedAt: T0 + 33_100 }, endAt: T0 + 33_100 },
      { events: b.slice(0, 4), turn: { startedAt: T0 + 100_000 }, endAt: T0 + 190_000 },
    ]);
    expect(lines[0]).toEqual({ step: "script-run-requested → (never answered)", count: 1, totalMs: 89_000, maxMs: 89_000 });
    expect(lines[1]).toEqual({ step: "script-run-requested → script-run-started", count: 1, totalMs: 30_000, maxMs: 30_000 });
    expect(lines).toHaveLength(3);
  });
});
