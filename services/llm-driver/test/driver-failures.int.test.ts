// The driver's unhappy paths on a real nats-server with the real `openai` client against the
// fake model: a failing model retried with the reducer's backoff until it gives up (exact
// messages), a stalled model abandoned by the idle watchdog, an interrupt that cancels with
// the partial text, and a settlement by someone else that makes the driver stand down.

import { expiryBatch } from "@agentrt/agent-core";
import type { AgentEvent } from "@agentrt/contract";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { LlmDriver } from "../src/driver.ts";
import { INTERRUPT_SUBJECT, parseInterruptReply, requestInterrupt } from "@agentrt/service-kit";
import {
  append,
  birthEvents,
  type DriverEnv,
  foldStream,
  publishLlmWork,
  reducerStep,
  seedTurn,
  startDriverEnv,
  userMessage,
  waitForEvent,
} from "./driver-harness.ts";

const IDLE_MS = 1500;
let env: DriverEnv;
let driver: LlmDriver;
beforeAll(async () => {
  env = await startDriverEnv();
  driver = await env.startDriver({ idleTimeoutMs: IDLE_MS });
});
afterAll(async () => env?.close());

const settledOf = (events: readonly AgentEvent[], R: number) =>
  events.filter((e) => e.type === "agent/llm-request-settled" && e.payload.requestOffset === R);

async function firstChunk(path: string, fromOffset: number): Promise<void> {
  const live = env.store.subscribe(path, { fromOffset, ephemeral: true });
  for await (const event of live) if (event.type === "agent/llm-response-chunks") break;
  await live.close();
}

describe("llm-driver: failures", () => {
  it("a failing model is retried with backoff, then given up, with the exact messages", async () => {
    const path = "/agents/test/failing";
    for (let i = 0; i < 3; i += 1) env.model.script({ failure: { status: 500, message: "boom" } });
    await append(env.store, path, [
      ...birthEvents(),
      { type: "agent/configured", payload: { config: { llmRequestRetryPolicy: { maxAttempts: 3, backoffBaseMs: 400, backoffMaxMs: 1000 } } } },
      userMessage("please answer"),
    ]);
    const requests: AgentEvent[] = [];
    const failures: AgentEvent[] = [];
    // Play the reducer: decide at the head, append the (debounced, backed-off) request, hand it
    // to the driver, wait for its settlement, repeat until nothing more is scheduled.
    for (let attempt = 1; attempt <= 4; attempt += 1) {
      const step = await waitFor(
        async () => {
          const s = await reducerStep(env, path);
          return s.requestOffset !== undefined || s.wakeAtMs === null ? s : undefined;
        },
        { timeoutMs: 5_000, intervalMs: 10, what: `the reducer's request #${attempt}` },
      );
      if (step.requestOffset === undefined) break;
      const R = step.requestOffset;
      requests.push((await env.store.read(path, { fromOffset: R, limit: 1 }))[0] as AgentEvent);
      failures.push(await waitForEvent(env.store, path, "stream/error-occurred", (e) => e.idempotencyKey === `agent/failure-error/${R}`));
    }
    expect(requests).toHaveLength(3);
    const [r1, r2, r3] = requests.map((r) => r.offset) as [number, number, number];
    expect(failures.map((f) => (f.type === "stream/error-occurred" ? f.payload.message : ""))).toEqual([
      `LLM request @${r1} failed (attempt 1 of 3): HTTP 500: boom. Retrying.`,
      `LLM request @${r2} failed (attempt 2 of 3): HTTP 500: boom. Retrying.`,
      `LLM request @${r3} failed (attempt 3 of 3): HTTP 500: boom. Giving up; a new user message starts fresh.`,
    ]);
    const events = await env.store.read(path);
    for (const R of [r1, r2, r3]) {
      const settled = settledOf(events, R);
      expect(settled).toHaveLength(1);
      expect(settled[0]?.payload).toMatchObject({ requestOffset: R, result: { status: "failed", errorMessage: "HTTP 500: boom" } });
      // Settled and error are one batch: consecutive offsets.
      expect(events.find((e) => e.idempotencyKey === `agent/failure-error/${R}`)?.offset).toBe((settled[0]?.offset ?? 0) + 1);
    }
    // Backoff: each retry waited 2^(failures-1) × 400 ms after the failed settlement.
    const at = (offset: number) => Date.parse(events.find((e) => e.offset === offset)?.createdAt ?? "");
    const settledAt = (R: number) => Date.parse(settledOf(events, R)[0]?.createdAt ?? "");
    expect(at(r2) - settledAt(r1)).toBeGreaterThanOrEqual(400);
    expect(at(r3) - settledAt(r2)).toBeGreaterThanOrEqual(800);
    const state = await foldStream(env.store, path);
    expect(state.consecutiveLlmFailures).toBe(3);
    expect(state.pendingLlmRequestTrigger).toBeNull();
    expect(state.openRequest).toBeNull();
    expect(env.model.requests.filter((r) => JSON.stringify(r.body).includes("please answer"))).toHaveLength(3);
  });

  it("a stalled model is abandoned by the idle watchdog and settles failed", async () => {
    const path = "/agents/test/stalled";
    env.model.script({ text: "one two three four five six", stallAfterTokens: 2 });
    const R = await seedTurn(env, path, "stall");
    const started = Date.now();
    await publishLlmWork(env, path, R);
    const error = await waitForEvent(env.store, path, "stream/error-occurred", (e) => e.idempotencyKey === `agent/failure-error/${R}`, 15_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_MS);
    expect(error.payload.message).toBe(`LLM request @${R} failed (attempt 1 of 3): no progress from the model for 1.5 s (idle watchdog). Retrying.`);
    const settled = settledOf(await env.store.read(path), R);
    expect(settled).toHaveLength(1);
    expect(settled[0]?.payload).toMatchObject({ result: { status: "failed", errorMessage: "no progress from the model for 1.5 s (idle watchdog)" } });
    const request = env.model.requests.find((r) => JSON.stringify(r.body).includes('"stall"'));
    await waitFor(() => request?.progress.clientAborted, { what: "the driver to hang up on the stalled model" });
    expect(request?.progress.tokensSent).toBe(2);
  });

  it("a model sending only empty deltas is abandoned by the idle watchdog, not kept alive by them", async () => {
    // Red-team: an empty delta every 200 ms held the turn, and a driver slot, until the request expired.
    const path = "/agents/test/empty-deltas";
    env.model.script({ tokens: Array.from({ length: 200 }, () => ""), tokensPerSecond: 20 });
    const R = await seedTurn(env, path, "keep-alive");
    const started = Date.now();
    await publishLlmWork(env, path, R);
    const error = await waitForEvent(env.store, path, "stream/error-occurred", (e) => e.idempotencyKey === `agent/failure-error/${R}`, 15_000);
    // Within the idle time and well before the 10 s the deltas would have lasted
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_MS);
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(error.payload.message).toBe(`LLM request @${R} failed (attempt 1 of 3): no progress from the model for 1.5 s (idle watchdog). Retrying.`);
  });

  it("a model that finishes and reports usage but keeps the connection open settles its answer at once", async () => {
    const path = "/agents/test/never-closes";
    env.model.script({ text: "complete answer", keepOpenAfterFinish: true });
    const R = await seedTurn(env, path, "answer and linger");
    const started = Date.now();
    await publishLlmWork(env, path, R);
    const settled = await waitForEvent(env.store, path, "agent/llm-request-settled", (e) => e.payload.requestOffset === R, 15_000);
    expect(settled.payload.result).toMatchObject({ status: "succeeded", text: "complete answer" });
    // Not after the idle watchdog: the usage chunk is the stream's last
    expect(Date.now() - started).toBeLessThan(IDLE_MS);
  });

  it("an interrupt aborts the call, replies with the partial text, and commits nothing", async () => {
    const path = "/agents/test/interrupted";
    const tokens = Array.from({ length: 200 }, (_, i) => `w${i} `);
    env.model.script({ tokens, tokensPerSecond: 40 });
    const R = await seedTurn(env, path, "talk slowly");
    const sawChunk = firstChunk(path, R + 1);
    await publishLlmWork(env, path, R);
    await sawChunk;
    // A malformed interrupt naming the running request is refused, and the call runs on.
    const refused = await env.nc.request(INTERRUPT_SUBJECT, JSON.stringify({ streamPath: path, requestOffset: String(R) }), { timeout: 2_000 });
    expect(parseInterruptReply(refused.json())).toEqual({ error: { code: "invalid_interrupt", message: expect.stringContaining("requestOffset") } });
    expect(driver.runningCount).toBe(1);
    const partialText = (await requestInterrupt(env.nc, { streamPath: path, requestOffset: R }, { timeoutMs: 2_000 })) ?? "";
    expect(partialText.length).toBeGreaterThan(0);
    expect(tokens.join("").startsWith(partialText)).toBe(true);
    expect(partialText).not.toBe(tokens.join(""));
    const request = env.model.requests.find((r) => JSON.stringify(r.body).includes("talk slowly"));
    await waitFor(() => request?.progress.clientAborted, { what: "the model call to be aborted" });
    await waitFor(() => driver.runningCount === 0, { what: "the driver to stand down" });
    // The driver committed nothing: the reducer appends the cancellation, which then stands.
    expect(settledOf(await env.store.read(path), R)).toHaveLength(0);
    await append(env.store, path, [
      { type: "agents/context-added", payload: { role: "assistant", content: `[Response interrupted by the user's next message; partial output follows]\n${partialText}` }, idempotencyKey: `agent/render-interrupted-partial@${R}` },
      { type: "agent/llm-request-settled", payload: { requestOffset: R, result: { status: "cancelled", reason: "interrupted-by-user-input", partialText } }, idempotencyKey: `agent/settle/${R}` },
    ]);
    const events = await env.store.read(path);
    expect(settledOf(events, R)).toHaveLength(1);
    expect(events.some((e) => e.idempotencyKey === `agent/assistant-context@${R}`)).toBe(false);
  });

  it("a call still streaming at the request's expiresAt is abandoned and settles failed", async () => {
    const path = "/agents/test/deadline";
    env.model.script({ tokens: Array.from({ length: 200 }, (_, i) => `d${i} `), tokensPerSecond: 40 });
    await append(env.store, path, [...birthEvents(), userMessage("take your time")]);
    const expiresAt = new Date(Date.now() + 1_500).toISOString();
    const [request] = await append(env.store, path, [{ type: "agent/llm-request-requested", payload: { model: "openai/gpt-5.6-terra", expiresAt } }]);
    const R = request!.offset;
    await publishLlmWork(env, path, R);
    const error = await waitForEvent(env.store, path, "stream/error-occurred", (e) => e.idempotencyKey === `agent/failure-error/${R}`);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    expect(error.payload.message).toBe(`LLM request @${R} failed (attempt 1 of 3): the request's deadline ${expiresAt} passed before the model finished. Retrying.`);
    const request2 = env.model.requests.find((r) => JSON.stringify(r.body).includes("take your time"));
    await waitFor(() => request2?.progress.clientAborted, { what: "the model call to be aborted at the deadline" });
  });

  it("nobody answers an interrupt for a request no driver is running", async () => {
    await expect(
      env.nc.request(INTERRUPT_SUBJECT, JSON.stringify({ streamPath: "/agents/test/nobody", requestOffset: 9 }), { timeout: 300 }),
    ).rejects.toThrow();
    await expect(requestInterrupt(env.nc, { streamPath: "/agents/test/nobody", requestOffset: 9 }, { timeoutMs: 300 })).resolves.toBeUndefined();
  });

  it("stands down without committing when someone else settles the request first", async () => {
    const path = "/agents/test/settled-elsewhere";
    env.model.script({ tokens: Array.from({ length: 200 }, (_, i) => `x${i} `), tokensPerSecond: 40 });
    const R = await seedTurn(env, path, "expire me");
    const sawChunk = firstChunk(path, R + 1);
    const subscribe = vi.spyOn(env.store, "subscribe");
    try {
      await publishLlmWork(env, path, R);
      await sawChunk;
      await append(env.store, path, expiryBatch(R));
      const request = env.model.requests.find((r) => JSON.stringify(r.body).includes("expire me"));
      await waitFor(() => request?.progress.clientAborted, { what: "the model call to be aborted" });
      await waitFor(() => driver.runningCount === 0, { what: "the driver to stand down" });
      // The driver learnt of the settlement from its stream cache's feed: no subscription (a
      // JetStream consumer made and deleted) of its own for the turn.
      expect(subscribe).not.toHaveBeenCalled();
    } finally {
      subscribe.mockRestore();
    }
    const events = await env.store.read(path);
    expect(settledOf(events, R).map((e) => e.payload)).toEqual([{ requestOffset: R, result: { status: "cancelled", reason: "expired" } }]);
    expect(events.filter((e) => e.offset > R).map((e) => e.type)).toEqual(["agent/llm-request-settled", "stream/error-occurred"]);
  });
});
