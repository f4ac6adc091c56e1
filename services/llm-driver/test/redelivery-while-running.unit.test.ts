// Regression (chaos soak, issue 16): a redelivery of a work item this driver was still running
// waited for that run and was then acked as "already-settled" without looking. When the run had
// ended without settling (its settlement append failed while a NATS node was down; its own
// delivery, no longer the live one, was naked for nothing), the request stayed undriven until it
// expired. The redelivery now decides again from the stream.

import { MemoryEventStore } from "@agentrt/streams";
import { describe, expect, it } from "vitest";
import type { DriverMetrics } from "../src/metrics.ts";
import { RequestRunner, type RequestRunnerDeps } from "../src/request-runner.ts";
import { RunningRequests } from "../src/running-requests.ts";
import { testLogger } from "@agentrt/testing";

describe("a redelivered work item whose request this driver is still running", () => {
  it("waits for that run, then decides again from the stream instead of answering already-settled", async () => {
    const store = new MemoryEventStore();
    await store.append("/agents/a", [{ type: "agent/created", payload: {} }]);
    const running = new RunningRequests();
    let finish!: () => void;
    const earlier = { partialText: () => "", stop: () => undefined, done: new Promise<void>((r) => (finish = r)) };
    running.add("/agents/a", 5, earlier);
    // Only the store, the logger and the running table are reached before the request is found.
    const runner = new RequestRunner({ store, running, logger: testLogger("test"), nowMs: Date.now, metrics: {} as DriverMetrics, providers: {} } as unknown as RequestRunnerDeps);
    const redelivered = runner.run("/agents/a", 5);
    // The earlier run ends without a settlement on the stream.
    running.delete("/agents/a", 5, earlier);
    finish();
    // Request 5 is not on the stream as read: try the item again later, never ack it.
    expect(await redelivered).toBe("not-visible");
  });

  it("given two deliveries of one request arriving together, then the second waits for the first from its start: one read, one decision at a time", async () => {
    const store = new MemoryEventStore();
    await store.append("/agents/a", [{ type: "agent/created", payload: {} }]);
    let reading = 0;
    let most = 0;
    const readStream = async (path: string) => {
      most = Math.max(most, ++reading);
      await new Promise((resolve) => setTimeout(resolve, 30));
      reading--;
      return await store.read(path);
    };
    const runner = new RequestRunner({ store, readStream, running: new RunningRequests(), logger: testLogger("test"), nowMs: Date.now, metrics: {} as DriverMetrics, providers: {} } as unknown as RequestRunnerDeps);
    // Red-team: redrives delivered together each read the stream and called the model
    const outcomes = await Promise.all([runner.run("/agents/a", 5), runner.run("/agents/a", 5), runner.run("/agents/a", 5)]);
    expect(outcomes).toEqual(["not-visible", "not-visible", "not-visible"]);
    expect(most).toBe(1);
    // Another request is not held behind it
    most = 0;
    await Promise.all([runner.run("/agents/a", 5), runner.run("/agents/a", 6)]);
    expect(most).toBe(2);
  });
});
