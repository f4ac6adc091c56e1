// A script work item naming a request past the stream's end (a bug, or the reducer's credentials
// in the wrong hands) is tried while a lagging read could still catch up, then dropped, on a real
// nats-server: before, the host read the stream again every half second forever.

import { publishWork, workStreamName } from "@agentrt/service-kit";
import { waitForConsumerEmptied } from "@agentrt/testing";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HostFixture, settlementOf, startFixture, uniquePath } from "./harness.ts";

let fx: HostFixture;
beforeAll(async () => {
  fx = await startFixture({ host: { maxNotVisibleDeliveries: 3 } });
});
afterAll(async () => fx?.stop());

describe("a script work item whose request the stream never shows", () => {
  it("given an offset past the stream's end, when delivered, then it is dropped after the bounded deliveries, and scripts still run", async () => {
    const path = uniquePath("past-the-end");
    await fx.store.append(path, [{ type: "agent/created", payload: {} }]);
    await publishWork(jetstream(fx.nc), "script", fx.store.partitionOf(path), { streamPath: path, requestedOffset: 9_000_000, executionId: "never" });
    const jsm = await jetstreamManager(fx.nc);
    // Then the queue holds nothing for it once the worker gave up (three deliveries, half a second apart), and stays so
    await waitForConsumerEmptied(() => jsm.consumers.info(workStreamName("script"), "capability-host"), { deliveries: 3, what: "the unreachable item dropped" });
    expect(await settlementOf(fx, uniquePath("after"), "return 40 + 2;")).toEqual({ status: "succeeded", result: 42 });
  }, 60_000);
});
