// A work item naming a request past the stream's end (a bug, or the reducer's credentials in
// the wrong hands) is tried while a lagging read could still catch up, then dropped, on a real
// nats-server: before, it was tried every half second forever, reading the whole stream each time.

import { workStreamName } from "@agentrt/service-kit";
import { waitForConsumerEmptied } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DriverEnv, publishLlmWork, seedTurn, startDriverEnv, waitForEvent } from "./driver-harness.ts";

let env: DriverEnv;
beforeAll(async () => {
  env = await startDriverEnv();
  await env.startDriver({ maxNotVisibleDeliveries: 3 });
});
afterAll(async () => env?.close());

describe("llm-driver: a work item whose request the stream never shows", () => {
  it("given an offset past the stream's end, when delivered, then it is dropped after the bounded deliveries, and the next turn is served", async () => {
    const path = "/agents/test/past-the-end";
    const R = await seedTurn(env, path, "hello");
    await publishLlmWork(env, path, 9_000_000);
    // Then the queue holds nothing for it once the worker gave up (three deliveries, half a second apart), and stays so
    await waitForConsumerEmptied(() => env.jsm.consumers.info(workStreamName("llm"), "llm-driver"), { deliveries: 3, what: "the unreachable item dropped" });
    // And a real request is served as ever
    env.model.script({ text: "hi there" });
    await publishLlmWork(env, path, R);
    const settled = await waitForEvent(env.store, path, "agent/llm-request-settled", (e) => e.payload.requestOffset === R);
    expect(settled.payload.result).toMatchObject({ status: "succeeded", text: "hi there" });
  }, 60_000);
});
