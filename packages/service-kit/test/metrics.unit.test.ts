// One registry per process: a metric asked for again by name is the one already registered, so
// an llm-driver run inside the reducer's process shares its registry (both count refused appends).

import { describe, expect, it } from "vitest";
import { countRefusedAppends, createMetrics } from "../src/metrics.ts";

describe("createMetrics", () => {
  it("given a counter registered, when it is asked for again by name, then the same counter comes back and is exposed once", async () => {
    const metrics = createMetrics("agent-reducer", { collectDefaults: false });
    const first = metrics.counter("agentrt_things_total", "Things", ["kind"]);
    const again = metrics.counter("agentrt_things_total", "Things", ["kind"]);
    expect(again).toBe(first);
    again.inc({ kind: "a" });
    const text = await metrics.registry.metrics();
    expect(text.match(/# TYPE agentrt_things_total counter/g)).toHaveLength(1);
    expect(text).toContain('agentrt_things_total{kind="a",service="agent-reducer"} 1');
  });

  it("given two services counting refused appends in one registry, when each refuses, then each is counted under its own name", async () => {
    const metrics = createMetrics("agent-reducer", { collectDefaults: false });
    const reducer = countRefusedAppends(metrics, "agent-reducer");
    const driver = countRefusedAppends(metrics, "llm-driver");
    reducer("agent/llm-request-settled");
    driver("agent/llm-request-requested");
    const text = await metrics.registry.metrics();
    expect(text).toContain('agentrt_store_refused_appends_total{service="agent-reducer",type="agent/llm-request-settled"} 1');
    expect(text).toContain('agentrt_store_refused_appends_total{service="llm-driver",type="agent/llm-request-requested"} 1');
  });

  it("given gauges and histograms asked for twice, when registered, then neither throws and each is the same metric", () => {
    const metrics = createMetrics("x", { collectDefaults: false });
    expect(metrics.gauge("agentrt_g", "G")).toBe(metrics.gauge("agentrt_g", "G"));
    expect(metrics.histogram("agentrt_h", "H")).toBe(metrics.histogram("agentrt_h", "H"));
  });
});
