// The script-run lifecycle, given / when / then: given a stream with a script request (and
// maybe its start or settlement), when a host takes the work item at some time, then it does
// nothing, leaves or orphans a started run, settles expired / deadline / too large, or checks
// and runs it with the right deadlines; and the scope the script sees.

import { describe, expect, it } from "vitest";
import type { AgentEvent } from "@agentrt/contract";
import { decideScriptRun, runDeadline, scriptScopeAt } from "../src/index.ts";
import { TestStream } from "./support/stream.ts";

const LIMITS = { deadlineMarginMs: 15_000, maxSourceBytes: 64 };
const ID = "agent-output:9";

function requestedScript(code = "return 1;") {
  const s = new TestStream();
  const created = s.created();
  const expiresAt = new Date(s.now + 600_000).toISOString();
  const requested = s.event("capability-host/script-run-requested", { code, executionId: ID, expiresAt });
  return { s, events: [created, requested] as AgentEvent[], requested, expiresAtMs: Date.parse(expiresAt) };
}

describe("decideScriptRun", () => {
  it("a work item naming no request on the stream is not found", () => {
    const { s, events } = requestedScript();
    expect(decideScriptRun(events, "agent-output:99", s.now, LIMITS)).toEqual({ kind: "not-found" });
  });

  it("a settled script is left alone, even if the settlement came from elsewhere", () => {
    const { s, events } = requestedScript();
    const settled = s.event("capability-host/script-run-settled", { executionId: ID, settlement: { status: "succeeded" } });
    expect(decideScriptRun([...events, settled], ID, s.now, LIMITS)).toEqual({ kind: "settled" });
  });

  it("a started, unsettled script is never re-run: the shell orphans it unless its host lives", () => {
    const { s, events, requested } = requestedScript();
    const started = s.event("capability-host/script-run-started", { executionId: ID });
    expect(decideScriptRun([...events, started], ID, s.now, LIMITS)).toEqual({ kind: "started", requested });
  });

  it("an unstarted script past expiresAt is expired (before the deadline rule)", () => {
    const { events, expiresAtMs } = requestedScript();
    expect(decideScriptRun(events, ID, expiresAtMs, LIMITS).kind).toBe("expired");
  });

  it("an unstarted script inside the last margin before expiresAt is too late to start", () => {
    const { events, expiresAtMs } = requestedScript();
    expect(decideScriptRun(events, ID, expiresAtMs - LIMITS.deadlineMarginMs, LIMITS).kind).toBe("deadline");
    expect(decideScriptRun(events, ID, expiresAtMs - LIMITS.deadlineMarginMs - 1, LIMITS).kind).toBe("check-and-run");
  });

  it("a source over the byte limit (UTF-8 bytes, not characters) is refused before any check", () => {
    const { s, events } = requestedScript(`return "${"é".repeat(30)}";`);
    expect(decideScriptRun(events, ID, s.now, LIMITS)).toMatchObject({ kind: "source-too-large", bytes: 70, limitBytes: 64 });
  });

  it("otherwise it is checked and run, the check bounded by expiresAt minus the margin", () => {
    const { s, events, requested, expiresAtMs } = requestedScript();
    expect(decideScriptRun(events, ID, s.now, LIMITS)).toEqual({ kind: "check-and-run", requested, checkDeadlineAtMs: expiresAtMs - LIMITS.deadlineMarginMs });
  });
});

describe("runDeadline", () => {
  it("runs until the execution deadline or the longest run, whichever comes first", () => {
    expect(runDeadline(10_000, 1_000, 120_000)).toEqual({ kind: "run", deadlineAtMs: 10_000 });
    expect(runDeadline(500_000, 1_000, 120_000)).toEqual({ kind: "run", deadlineAtMs: 121_000 });
  });

  it("a check that used up the time settles deadline", () => {
    expect(runDeadline(10_000, 10_000, 120_000)).toEqual({ kind: "deadline" });
  });
});

describe("scriptScopeAt", () => {
  it("sees the config, preamble and results committed before its request, not after", () => {
    const s = new TestStream();
    const events: AgentEvent[] = [
      s.created(),
      s.configured({ maxAutonomousTurns: 3 }),
      s.event("capability-host/preamble-set", { key: "helpers", code: "const two = 2;" }),
      s.event("capability-host/script-run-settled", { executionId: "agent-output:1", settlement: { status: "succeeded", result: 41 } }),
    ];
    const requestedAt = s.nextOffset;
    events.push(s.event("capability-host/script-run-requested", { code: "return two;", executionId: ID, expiresAt: new Date(s.now + 60_000).toISOString() }));
    events.push(s.event("capability-host/preamble-set", { key: "later", code: "const three = 3;" }));
    const scope = scriptScopeAt(events, requestedAt);
    expect(scope.config.maxAutonomousTurns).toBe(3);
    expect(scope.preamble).toContain("const two = 2;");
    expect(scope.preamble).not.toContain("three");
    expect(scope.resultsPreamble).toContain("agent-output:1");
  });
});
