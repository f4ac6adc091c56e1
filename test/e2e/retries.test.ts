// A failing model, with the real reducer and driver processes: the reducer retries with
// exponential backoff, the driver settles each attempt failed with the contract's exact
// messages, the third failure gives up, and a new user message starts fresh.

import type { AgentEvent } from "@agentrt/contract";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type System, startSystem } from "../support/system.ts";
import { lastUserContent, say } from "../support/turns.ts";

let system: System;
beforeAll(async () => {
  system = await startSystem({
    reducers: 1,
    drivers: 1,
    model: {
      replies: [
        { failure: { status: 500, message: "upstream exploded" } },
        { failure: { status: 500, message: "upstream exploded" } },
        { failure: { status: 500, message: "upstream exploded" } },
      ],
      defaultReply: (request) => ({ text: `answer to ${lastUserContent(request.body)}` }),
    },
  });
});
afterAll(async () => system?.stop());

it("retries with backoff, gives up at maxAttempts with the exact messages, and a new message starts fresh", async () => {
  const path = "/agents/e2e/retries";
  await system.store.append(path, [
    { type: "agent/created", payload: {} },
    { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 0, llmRequestRetryPolicy: { maxAttempts: 3, backoffBaseMs: 300, backoffMaxMs: 1000 } } } },
  ]);
  await say(system.store, path, "hello?");
  const of = (events: AgentEvent[], type: string) => events.filter((e) => e.type === type);
  await waitFor(async () => of(await system.store.read(path), "stream/error-occurred").length === 3, { timeoutMs: 60_000, intervalMs: 100 });
  const events = await system.store.read(path);
  const requests = of(events, "agent/llm-request-requested");
  const settled = of(events, "agent/llm-request-settled");
  const errors = of(events, "stream/error-occurred").map((e) => (e.payload as { message: string }).message);
  expect(requests).toHaveLength(3);
  expect(settled.map((e) => (e.payload as { result: { status: string } }).result.status)).toEqual(["failed", "failed", "failed"]);
  requests.forEach((r, i) => {
    const tail = i < 2 ? "Retrying." : "Giving up; a new user message starts fresh.";
    expect(errors[i]).toMatch(new RegExp(`^LLM request @${r.offset} failed \\(attempt ${i + 1} of 3\\): .*upstream exploded.*\\. ${tail.replace(/[.;]/g, "\\$&")}$`));
  });
  // Backoff: the retry after failure n waits min(2^(n-1) × 300, 1000) ms from that failure.
  for (const [i, wait] of [[1, 300], [2, 600]] as const) {
    const gap = Date.parse(requests[i]!.createdAt) - Date.parse(settled[i - 1]!.createdAt);
    expect(gap).toBeGreaterThanOrEqual(wait);
  }
  // Given up: nothing more is scheduled until new external input, which starts fresh.
  expect(system.model.requests).toHaveLength(3);
  await say(system.store, path, "try again");
  await waitFor(async () => (await system.store.read(path)).some((e) => e.type === "agents/context-added" && e.payload.role === "assistant"), { timeoutMs: 30_000 });
  const after = await system.store.read(path);
  expect(of(after, "agent/llm-request-requested")).toHaveLength(4);
  expect((of(after, "agent/llm-request-settled").at(-1)!.payload as { result: { status: string } }).result.status).toBe("succeeded");
});
