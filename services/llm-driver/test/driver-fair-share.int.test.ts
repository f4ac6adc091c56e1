// The driver's slots under a provider that trickles its replies, on a real nats-server with the
// real `openai` client against two fake models: one tenant's calls to the slow provider hold
// every slot for as long as their requests live, and another tenant's turn, or the same
// tenant's turn on a healthy provider, is still answered at once (spare slots), while the
// slow tenant's further items wait their turn or go back to the queue, never past the slots.
// Red-team (2026-12-07): 32 trickling calls held every slot and another tenant's agent on a
// healthy provider waited 9 m 26 s.

import type { AgentEvent } from "@agentrt/contract";
import { INTERRUPT_SUBJECT } from "@agentrt/service-kit";
import { type FakeModel, startFakeModel, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LlmDriver } from "../src/driver.ts";
import { type DriverEnv, publishLlmWork, seedTurn, startDriverEnv, waitForEvent } from "./driver-harness.ts";

const CONCURRENCY = 4;
let env: DriverEnv;
let slow: FakeModel;
let driver: LlmDriver;
beforeAll(async () => {
  env = await startDriverEnv();
  // A provider that streams one word every two seconds for as long as it is let.
  slow = await startFakeModel({ defaultReply: { tokens: Array.from({ length: 1_000 }, (_, i) => `w${i} `), tokensPerSecond: 0.5 } });
  driver = await env.startDriver({
    concurrency: CONCURRENCY,
    providers: { ...env.providers, slow: { baseUrl: slow.url, apiKey: "test-key", api: "chat", promptCacheKey: false } },
  });
});
afterAll(async () => {
  await env?.close();
  await slow?.close();
});

const settledText = (event: AgentEvent): unknown => (event.payload as { result: { text?: string } }).result.text;

describe("llm-driver: fair share of slots", () => {
  it("given one tenant's calls to a trickling provider holding every slot, when another tenant's and a healthy provider's turns come, then they are answered at once", async () => {
    // Given tenant /agents/flood's eight agents on the slow provider: twice the slots
    const flood = Array.from({ length: 8 }, (_, i) => `/agents/flood/${i}`);
    for (const path of flood) await publishLlmWork(env, path, await seedTurn(env, path, `trickle ${path}`, { model: "slow/crawler" }));
    // The slots fill: exactly CONCURRENCY calls reach the slow provider
    await slow.waitForRequests(CONCURRENCY, 10_000);
    await waitFor(() => driver.runningCount === CONCURRENCY || undefined, { timeoutMs: 5_000 });

    // When another tenant's agent and the flood tenant's agent on a healthy provider ask
    env.model.script({ text: "answer for the other tenant" });
    env.model.script({ text: "answer on the healthy provider" });
    const other = "/agents/other/1";
    const otherR = await seedTurn(env, other, "are you there?");
    const started = Date.now();
    await publishLlmWork(env, other, otherR);
    const healthy = "/agents/flood/healthy";
    const healthyR = await seedTurn(env, healthy, "and here?");
    await publishLlmWork(env, healthy, healthyR);

    // Then both are answered within seconds, while every slow call still trickles
    const [otherSettled, healthySettled] = await Promise.all([
      waitForEvent(env.store, other, "agent/llm-request-settled", (e) => e.payload.requestOffset === otherR, 10_000),
      waitForEvent(env.store, healthy, "agent/llm-request-settled", (e) => e.payload.requestOffset === healthyR, 10_000),
    ]);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(settledText(otherSettled)).toBe("answer for the other tenant");
    expect(settledText(healthySettled)).toBe("answer on the healthy provider");
    // And the flood never took more than its slots: its other four wait or went back to the queue
    expect(slow.requests).toHaveLength(CONCURRENCY);
    expect(slow.requests.filter((r) => !r.progress.completed && !r.progress.clientAborted)).toHaveLength(CONCURRENCY);
    expect(driver.runningCount).toBe(CONCURRENCY);
  });

  it("given a request waiting for a slot, when the reducer interrupts it, then this driver answers at once with no text and never calls the model for it", async () => {
    // Given the flood's calls still hold every slot, and one of its items waits for a slot here
    const [waiting] = await waitFor(() => {
      const found = driver.waitingForSlot();
      return found.length > 0 ? found : undefined;
    }, { timeoutMs: 10_000, what: "a request waiting for a slot" });
    const calls = slow.requests.length;
    // When the interrupt comes (as the reducer sends it on the user's next message)
    const reply = await env.nc.request(INTERRUPT_SUBJECT, JSON.stringify(waiting), { timeout: 5_000 });
    // Then it is answered, not left to the reducer's interrupt timeout: nothing was streamed
    expect(reply.json()).toEqual({ partialText: "" });
    await waitFor(() => !driver.waitingForSlot().some((w) => w.streamPath === waiting!.streamPath) || undefined, { timeoutMs: 5_000, what: "the run to stand down" });
    expect(slow.requests.some((r) => r.rawBody.includes(`trickle ${waiting!.streamPath}`))).toBe(false);
    expect(slow.requests.length).toBe(calls);
  });
});
