import { describe, expect, it } from "vitest";
import { countRefusedAppends, createMetrics, stopInOrder } from "../src/index.ts";

describe("stopInOrder", () => {
  it("reports not ready before anything stops, then runs each step after the previous one ended", async () => {
    const log: string[] = [];
    const step = (name: string, ms: number) => async () => {
      log.push(`${name} start`);
      await new Promise((r) => setTimeout(r, ms));
      log.push(`${name} end`);
    };
    const running = stopInOrder({ markStopping: () => log.push("not ready") }, step("work", 20), step("ops", 0), step("nats", 5));
    expect(log).toEqual([]);
    await running.stop();
    expect(log).toEqual(["not ready", "work start", "work end", "ops start", "ops end", "nats start", "nats end"]);
  });

  it("stops at a failing step and rejects with its error (the supervisor exits 1 on it)", async () => {
    const log: string[] = [];
    const running = stopInOrder(
      { markStopping: () => log.push("not ready") },
      () => Promise.reject(new Error("drain failed")),
      async () => log.push("never"),
    );
    await expect(running.stop()).rejects.toThrow("drain failed");
    expect(log).toEqual(["not ready"]);
  });
});

describe("countRefusedAppends", () => {
  it("counts each refused type under the service's label", async () => {
    const metrics = createMetrics("test-service", { collectDefaults: false });
    const refused = countRefusedAppends(metrics, "llm-driver");
    refused("agent/user-message-added");
    refused("agent/user-message-added");
    refused("agent/paused");
    const text = await metrics.registry.metrics();
    expect(text).toContain('agentrt_store_refused_appends_total{service="llm-driver",type="agent/user-message-added"} 2');
    expect(text).toContain('agentrt_store_refused_appends_total{service="llm-driver",type="agent/paused"} 1');
  });
});
