// The reducer's safety net for lost work items: outstanding work on a quiet stream is issued
// again, with waits that double, and nothing is issued for an agent with nothing outstanding.

import { describe, expect, it } from "vitest";
import { DEFAULT_REDRIVE_AFTER_MS as AFTER, MAX_REDRIVE_INTERVAL_MS, redriveIntervalMs, workToRedrive } from "../src/index.ts";
import { given } from "./support/given.ts";
import { TestStream } from "./support/stream.ts";

describe("re-issuing outstanding work on a quiet stream", () => {
  it("issues nothing for an agent with no open request and no running script", () => {
    const s = new TestStream();
    const { state } = given(s.created(), s.user("hi"));
    expect(workToRedrive(state, { nowMs: s.now + 10 * AFTER, progressAtMs: s.now, redrivesSinceProgress: 0 })).toEqual({ requestOffset: null, scripts: [], checkAtMs: null });
  });

  it("waits for the quiet time before issuing an open request again, and says when to look", () => {
    const s = new TestStream();
    const { state } = given(s.created(), s.user("hi"), s.requested());
    const quietFrom = s.now;
    expect(workToRedrive(state, { nowMs: quietFrom + AFTER - 1, progressAtMs: quietFrom, redrivesSinceProgress: 0 })).toEqual({ requestOffset: null, scripts: [], checkAtMs: quietFrom + AFTER });
    expect(workToRedrive(state, { nowMs: quietFrom + AFTER, progressAtMs: quietFrom, redrivesSinceProgress: 0 })).toEqual({ requestOffset: 3, scripts: [], checkAtMs: quietFrom + AFTER + 2 * AFTER });
  });

  it("issues every unsettled script of the agent again, not the settled ones", () => {
    const s = new TestStream();
    const expiresAt = new Date(s.now + 600_000).toISOString();
    const { state } = given(
      s.created(),
      s.event("capability-host/script-run-requested", { code: "return 1;", executionId: "agent-output:1", expiresAt }),
      s.event("capability-host/script-run-requested", { code: "return 2;", executionId: "agent-output:2", expiresAt }),
      s.event("capability-host/script-run-started", { executionId: "agent-output:2" }),
      s.event("capability-host/script-run-settled", { executionId: "agent-output:1", settlement: { status: "succeeded", result: 1 } }),
    );
    const redrive = workToRedrive(state, { nowMs: s.now + AFTER, progressAtMs: s.now, redrivesSinceProgress: 0 });
    expect(redrive.requestOffset).toBeNull();
    expect(redrive.scripts).toEqual([{ executionId: "agent-output:2", requestedOffset: 3 }]);
  });

  it("backs off: each further re-issue waits twice as long, up to the cap", () => {
    const s = new TestStream();
    const { state } = given(s.created(), s.user("hi"), s.requested());
    const quietFrom = s.now;
    // The second re-issue is due AFTER + 2·AFTER after the last progress, not AFTER + AFTER.
    expect(workToRedrive(state, { nowMs: quietFrom + 2 * AFTER, progressAtMs: quietFrom, redrivesSinceProgress: 1 }).requestOffset).toBeNull();
    expect(workToRedrive(state, { nowMs: quietFrom + 3 * AFTER, progressAtMs: quietFrom, redrivesSinceProgress: 1 }).requestOffset).toBe(3);
    expect(redriveIntervalMs(50)).toBe(MAX_REDRIVE_INTERVAL_MS);
  });

  it("progress (a newer event or a reply streaming) postpones the re-issue", () => {
    const s = new TestStream();
    const { state } = given(s.created(), s.user("hi"), s.requested());
    const chunkAt = s.now + AFTER - 1_000;
    expect(workToRedrive(state, { nowMs: s.now + AFTER, progressAtMs: chunkAt, redrivesSinceProgress: 0 })).toEqual({ requestOffset: null, scripts: [], checkAtMs: chunkAt + AFTER });
  });

  it("honours a configured quiet time", () => {
    const s = new TestStream();
    const { state } = given(s.created(), s.user("hi"), s.requested());
    expect(workToRedrive(state, { nowMs: s.now + 5_000, progressAtMs: s.now, redrivesSinceProgress: 0, afterMs: 5_000 }).requestOffset).toBe(3);
  });
});
