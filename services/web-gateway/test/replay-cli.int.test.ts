// `agents replay FILE --decide OFFSET@ISO …` as users run it (tsx on cli/main.ts): for each
// pair, what the head decision appends after folding up to OFFSET with the clock at ISO, or
// when it next wakes, and why — the birth hold, the debounce, adoption and expiry, the backoff
// after a failure, the autonomous-turn breaker — and the usage error for a malformed pair.
// And the reaction policy replay runs: the reducer's defaults, or the deployment's worker
// switch (`--no-project-worker`) and AGENTS.md (`--agents-md FILE`).

import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { userMessage, scratchDir } from "@agentrt/testing";

const root = join(import.meta.dirname, "../../..");
const tsx = join(root, "node_modules/.bin/tsx");
const main = join(root, "services/web-gateway/src/cli/main.ts");
const dir = scratchDir("agentrt-decide-");

const T0 = Date.parse("2026-08-24T16:41:00.000Z");
const at = (ms: number) => new Date(T0 + ms).toISOString();
const scriptResult = (executionId: string) => ({
  type: "agents/context-added",
  payload: { role: "developer", content: "Your script returned (in 5ms):\n```json\n1\n```", actor: { type: "script", executionId }, llmRequestPolicy: { behaviour: "after-current-request" } },
});
const requested = (expiresAtMs: number) => ({ type: "agent/llm-request-requested", payload: { model: "openai/gpt-5.6-terra", contractVersion: "7.0.0", expiresAt: at(expiresAtMs) } });

function scenario(name: string, events: Array<{ type: string; payload: unknown; atMs: number }>): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, stringify({ name, streamPath: `/agents/decide/${name}`, events: events.map((e, i) => ({ offset: i + 1, createdAt: at(e.atMs), type: e.type, payload: e.payload })) }));
  return file;
}

// A project agent's first turn, then a request that fails once.
const turns = scenario("turns", [
  { type: "agent/created", payload: { project: { name: "Demo", slug: "demo" } }, atMs: 0 }, // 1
  { type: "agent/configured", payload: { config: { interpretResponses: true, llmRequestDebounceMs: 60_000 } }, atMs: 0 }, // 2
  { ...userMessage("hi"), atMs: 0 }, // 3
  { type: "agent/configured", payload: { config: { interpretResponses: false, llmRequestDebounceMs: 250 } }, atMs: 2_000 }, // 4
  { ...requested(602_000), atMs: 2_000 }, // 5
  { type: "agent/llm-request-settled", payload: { requestOffset: 5, result: { status: "failed", errorMessage: "boom" } }, atMs: 5_000 }, // 6
]);

// An agent that keeps scheduling its own turns, limited to one.
const looping = scenario("looping", [
  { type: "agent/created", payload: {}, atMs: 0 }, // 1
  { type: "agent/configured", payload: { config: { maxAutonomousTurns: 1 } }, atMs: 0 }, // 2
  { ...userMessage("go"), atMs: 0 }, // 3
  { ...requested(600_000), atMs: 1_000 }, // 4
  { type: "agent/llm-request-settled", payload: { requestOffset: 4, result: { status: "succeeded", text: "ok" } }, atMs: 2_000 }, // 5
  { ...scriptResult("agent-output:6"), atMs: 3_000 }, // 6
  { ...requested(600_000), atMs: 4_000 }, // 7
  { type: "agent/llm-request-settled", payload: { requestOffset: 7, result: { status: "succeeded", text: "ok" } }, atMs: 5_000 }, // 8
  { ...scriptResult("agent-output:9"), atMs: 6_000 }, // 9
]);

interface Decision {
  offset: number;
  foldedThrough: number;
  at: string;
  appends: Array<{ type: string; payload: Record<string, unknown>; idempotencyKey?: string }>;
  wakeAt: string | null;
  adopt: { requestOffset: number } | null;
  why: Array<Record<string, unknown>>;
}

async function decide(file: string, ...pairs: string[]): Promise<Decision[]> {
  const { stdout } = await promisify(execFile)(tsx, [main, "replay", file, "--decide", ...pairs], { cwd: root });
  return (JSON.parse(stdout) as { decisions: Decision[] }).decisions;
}

describe("agents replay --decide", () => {
  it("shows the birth hold, the debounce, adoption, expiry and the backoff in time", async () => {
    const [held, released, adopted, expired, backoff, retried] = await decide(
      turns,
      `3@${at(1_000)}`,
      `4@${at(2_000)}`,
      `5@${at(2_000)}`,
      `5@${at(572_000)}`,
      `6@${at(5_000)}`,
      `6@${at(15_250)}`,
    );
    // The birth window holds the first turn until T0+60 s.
    expect(held).toMatchObject({ foldedThrough: 3, appends: [], wakeAt: at(60_000), why: [{ rule: "turn-waits", birthHold: true, triggerOffset: 3 }] });
    // The worker's configuration releases it: 250 ms after the trigger is long past.
    expect(released!.why).toEqual([expect.objectContaining({ rule: "turn-due", birthHold: false, debounceMs: 250 })]);
    expect(released!.appends).toEqual([expect.objectContaining({ type: "agent/llm-request-requested", idempotencyKey: "agent/request/3" })]);
    // An open request is handed to a driver, and looked at again 30 s before it expires …
    expect(adopted).toMatchObject({ appends: [], adopt: { requestOffset: 5 }, wakeAt: at(572_000), why: [{ rule: "request-adopted" }, { rule: "no-trigger" }] });
    // … when it is expired: the cancelled settlement and the stream error.
    expect(expired!.appends.map((e) => [e.type, e.idempotencyKey])).toEqual([
      ["agent/llm-request-settled", "agent/settle/5"],
      ["stream/error-occurred", "agent/expiry-error/5"],
    ]);
    // After the failure, the retry waits the debounce plus 10 s of backoff, then is requested.
    expect(backoff).toMatchObject({ appends: [], wakeAt: at(15_250), why: [{ rule: "turn-waits", backoffMs: 10_000, consecutiveFailures: 1 }] });
    expect(retried!.appends).toEqual([expect.objectContaining({ type: "agent/llm-request-requested", idempotencyKey: "agent/request/6" })]);
  });

  it("shows the autonomous-turn breaker pausing the agent", async () => {
    const [paused] = await decide(looping, `9@${at(7_000)}`);
    expect(paused!.why).toEqual([{ rule: "breaker", triggerOffset: 9, autonomousTurns: 1, maxAutonomousTurns: 1 }]);
    expect(paused!.appends).toEqual([expect.objectContaining({ type: "agent/paused", idempotencyKey: "agent/pause/9" })]);
  });

  it("a pair that is not OFFSET@ISO is a usage error", async () => {
    const failure = await promisify(execFile)(tsx, [main, "replay", turns, "--decide", "5@yesterday"], { cwd: root }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failure?.code).toBe(2);
    expect(failure?.stderr).toContain("--decide 5@yesterday");
  });
});

interface Replayed {
  derived: Array<{ fromOffset: number; type: string; payload: Record<string, unknown> }>;
}

async function replay(file: string, ...flags: string[]): Promise<Replayed> {
  const { stdout } = await promisify(execFile)(tsx, [main, "replay", file, ...flags], { cwd: root });
  return JSON.parse(stdout) as Replayed;
}

describe("agents replay runs the reducer's reaction policy", () => {
  const birthOf = (r: Replayed) => r.derived.filter((d) => d.fromOffset === 1);

  it("by default, the project worker configures an agent born into a project", async () => {
    const birth = birthOf(await replay(turns));
    expect(birth.map((d) => d.type)).toEqual(["agents/context-added", "agents/context-added", "agent/configured"]);
    expect(birth[0]?.payload).toMatchObject({ key: "config/agents-md" });
  });

  it("with the deployment's AGENTS.md, as PROJECT_AGENTS_MD_FILE gives it to the reducer", async () => {
    const file = join(dir, "AGENTS.md");
    writeFileSync(file, "Be terse; deploys go out on merge.\n");
    expect(birthOf(await replay(turns, "--agents-md", file))[0]?.payload).toMatchObject({ key: "config/agents-md", content: "Be terse; deploys go out on merge." });
  });

  it("with the worker switched off (PROJECT_WORKER=off), nothing configures the agent", async () => {
    expect(birthOf(await replay(turns, "--no-project-worker"))).toEqual([]);
  });

  it("a bare agent gets no birth reaction", async () => {
    expect(birthOf(await replay(looping))).toEqual([]);
  });
});
