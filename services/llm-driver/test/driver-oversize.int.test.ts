// What a model endpoint sends that a settlement cannot hold. Each was never settled: the store
// refused the batch, the work item was dropped, and the request stayed open until it expired
// (the reducer asking the model again on each redrive). Now each settles at once and says why:
// a reply past MAX_REPLY_BYTES is cut off as it streams (a 300 MB reply had grown the driver by a
// gigabyte), an endpoint's huge error is kept cut to MAX_ERROR_MESSAGE_CHARS, and a usage object
// that is not one (an array, megabytes) is dropped while the reply is kept.

import type { AgentEvent } from "@agentrt/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_ERROR_MESSAGE_CHARS, MAX_REPLY_BYTES } from "../src/settlement.ts";
import { type DriverEnv, publishLlmWork, seedTurn, startDriverEnv, waitForEvent } from "./driver-harness.ts";

let env: DriverEnv;
beforeAll(async () => {
  env = await startDriverEnv();
  await env.startDriver({});
});
afterAll(async () => env?.close());

async function settle(path: string): Promise<Extract<AgentEvent, { type: "agent/llm-request-settled" }>> {
  const R = await seedTurn(env, path);
  await publishLlmWork(env, path, R);
  return waitForEvent(env.store, path, "agent/llm-request-settled", (e) => e.payload.requestOffset === R, 30_000);
}

describe("llm-driver: what a settlement cannot hold", () => {
  it("a reply past MAX_REPLY_BYTES is cut off as it streams and settled failed, naming the bound", { timeout: 60_000 }, async () => {
    const requestsBefore = env.model.requests.length;
    env.model.script({ tokens: Array.from({ length: 700 }, () => "x".repeat(1_000)) });
    const settled = await settle("/agents/oversize/reply");
    expect(settled.payload.result).toEqual({ status: "failed", errorMessage: expect.stringContaining(`the model's reply passed ${MAX_REPLY_BYTES} bytes, more than one settlement stores`) });
    expect(env.model.requests.length - requestsBefore).toBe(1);
  });

  it("an endpoint's error of megabytes is kept cut, and the failure is settled", { timeout: 60_000 }, async () => {
    env.model.script({ failure: { status: 500, message: "e".repeat(2_000_000) } });
    const settled = await settle("/agents/oversize/error");
    const result = settled.payload.result;
    expect(result.status).toBe("failed");
    const message = result.status === "failed" ? result.errorMessage : "";
    expect(message.length).toBeLessThan(MAX_ERROR_MESSAGE_CHARS + 100);
    expect(message).toMatch(/… \(cut from \d+ characters\)$/);
  });

  it("a reply within the bound is kept whole", { timeout: 60_000 }, async () => {
    env.model.script({ tokens: Array.from({ length: 300 }, () => "y".repeat(1_000)) });
    const settled = await settle("/agents/oversize/within");
    expect(settled.payload.result).toMatchObject({ status: "succeeded", text: "y".repeat(300_000) });
  });
});
