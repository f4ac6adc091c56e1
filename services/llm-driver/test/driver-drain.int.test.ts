// A driver stopped with SIGTERM (a rollout, a scale-down) as a real process on a real
// nats-server: it takes no new turn, lets the reply it is streaming finish, settles it and exits,
// so the reply is neither cut off nor paid for twice; a reply longer than LLM_DRAIN_MS goes to
// another driver when the drain ends, still settled exactly once.

import { waitFor } from "@agentrt/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DriverEnv, publishLlmWork, seedTurn, startDriverEnv, waitForEvent } from "./driver-harness.ts";
import { claimant, DriverProcesses, firstChunk, outcomeFor } from "./driver-processes.ts";

let env: DriverEnv;
const processes = new DriverProcesses(() => env);

beforeAll(async () => {
  env = await startDriverEnv();
});
afterEach(() => processes.killAll());
afterAll(async () => env?.close());

const exitOf = (child: import("node:child_process").ChildProcess) =>
  new Promise<{ code: number | null; at: number }>((resolve) => child.once("exit", (code) => resolve({ code, at: Date.now() })));

describe("llm-driver drain on SIGTERM (real processes)", { timeout: 180_000 }, () => {
  it("SIGTERM mid-reply: the reply streams to its end and settles once from one model call; a turn published meanwhile goes to another driver; then the process exits 0", async () => {
    const path = "/agents/test/drain-finish";
    const other = "/agents/test/drain-other";
    const slow = Array.from({ length: 30 }, (_, i) => `drained${i} `);
    env.model.script({ tokens: slow, tokensPerSecond: 15, usage: { inputTokens: 10, outputTokens: 30 } });
    env.model.script({ text: "Answer from the second driver.", usage: { inputTokens: 10, outputTokens: 5 } });
    const before = env.model.requests.length;
    const first = await processes.spawn("a", { LLM_DRAIN_MS: "30000" });
    const R = await seedTurn(env, path, "finish while you stop");
    const streaming = firstChunk(env, path, R + 1);
    await publishLlmWork(env, path, R);
    await streaming;
    expect((await claimant([first], R, path)).name).toBe("a");

    const exited = exitOf(first.child);
    first.child.kill("SIGTERM");
    await first.waitForLog("draining", (l) => l.msg === "stopping: letting the model calls under way finish");
    // A turn handed out while it drains is not taken by it: it waits in the queue for a driver.
    const R2 = await seedTurn(env, other, "who takes this one?");
    await publishLlmWork(env, other, R2);

    const settled = await waitForEvent(env.store, path, "agent/llm-request-settled", () => true, 30_000);
    expect(settled.payload.result).toMatchObject({ status: "succeeded", text: slow.join("") });
    const { code, at: exitedAt } = await exited;
    expect(code).toBe(0);
    expect(exitedAt).toBeGreaterThanOrEqual(Date.parse(settled.createdAt));
    expect(first.logs.some((l) => l.msg === "drained: every model call under way finished")).toBe(true);
    // One model call for R, not cut off.
    const calls = env.model.requests.slice(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.progress.clientAborted).toBe(false);
    expect(calls[0]?.progress.completed).toBe(true);
    const { settled: all, assistant } = outcomeFor(await env.store.read(path), R);
    expect(all).toHaveLength(1);
    expect(assistant).toHaveLength(1);
    // The other turn never reached the stopping driver; the next driver answers it.
    expect(first.logs.some((l) => l.requestOffset === R2 && l.streamPath === other)).toBe(false);
    const second = await processes.spawn("b", { LLM_DRAIN_MS: "30000" });
    const answered = await waitForEvent(env.store, other, "agent/llm-request-settled", () => true, 30_000);
    expect(answered.payload.result).toMatchObject({ status: "succeeded", text: "Answer from the second driver." });
    expect((await claimant([first, second], R2, other)).name).toBe("b");
  });

  it("SIGTERM with a reply longer than LLM_DRAIN_MS: at the drain's end the call stops, another driver answers it, settled once", async () => {
    const path = "/agents/test/drain-limit";
    env.model.script({ tokens: Array.from({ length: 200 }, (_, i) => `long${i} `), tokensPerSecond: 20 });
    env.model.script({ text: "Answer after the drain.", usage: { inputTokens: 10, outputTokens: 4 } });
    const before = env.model.requests.length;
    const drivers = await Promise.all([processes.spawn("c", { LLM_DRAIN_MS: "500" }), processes.spawn("d", { LLM_DRAIN_MS: "500" })]);
    const R = await seedTurn(env, path, "too long to drain");
    const streaming = firstChunk(env, path, R + 1);
    await publishLlmWork(env, path, R);
    await streaming;
    const victim = await claimant(drivers, R);
    const exited = exitOf(victim.child);
    const signalledAt = Date.now();
    victim.child.kill("SIGTERM");
    const settled = await waitForEvent(env.store, path, "agent/llm-request-settled", () => true, 30_000);
    expect(settled.payload.result).toMatchObject({ status: "succeeded", text: "Answer after the drain." });
    const { code } = await exited;
    expect(code).toBe(0);
    const limit = await victim.waitForLog("drain limit", (l) => l.msg === "drain limit reached: the model calls still running go back to the queue");
    // The drain lasted its limit, not the reply's 10 s.
    expect(Number(limit.time) - signalledAt).toBeGreaterThanOrEqual(500 - 50);
    expect(Number(limit.time) - signalledAt).toBeLessThan(8_000);
    const survivor = drivers.find((d) => d !== victim)!;
    await waitFor(() => survivor.logs.find((l) => l.msg === "driving request" && l.requestOffset === R), { what: "the survivor to drive R" });
    const calls = env.model.requests.slice(before);
    expect(calls).toHaveLength(2);
    expect(calls[0]?.progress.clientAborted).toBe(true);
    expect(calls[1]?.rawBody).toBe(calls[0]?.rawBody);
    const { settled: all, assistant } = outcomeFor(await env.store.read(path), R);
    expect(all).toHaveLength(1);
    expect(assistant).toHaveLength(1);
  });
});
