import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { createTracing, inSpan, tracerOption, triggerOffsetOfRequestKey, turnContext, turnTraceId } from "../src/index.ts";

describe("turn tracing", () => {
  it("puts spans of different services for the same turn into one trace", async () => {
    const exporter = new InMemorySpanExporter();
    const reducer = await createTracing("agent-reducer", { exporter });
    const driver = await createTracing("llm-driver", { exporter });
    await inSpan(reducer.tracer, "reducer.request", turnContext("/agents/a", 25), {}, async () => undefined);
    // The driver knows only the request; its key names the trigger.
    const trigger = triggerOffsetOfRequestKey("agent/request/25")!;
    await inSpan(driver.tracer, "llm.request", turnContext("/agents/a", trigger), {}, async () => undefined);
    await inSpan(driver.tracer, "llm.request", turnContext("/agents/a", 30), {}, async () => undefined);
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.spanContext().traceId)).toEqual([
      turnTraceId("/agents/a", 25),
      turnTraceId("/agents/a", 25),
      turnTraceId("/agents/a", 30),
    ]);
    expect(spans[0]!.spanContext().traceId).not.toBe(spans[2]!.spanContext().traceId);
  });

  it("hands components a tracer only when spans go somewhere", async () => {
    const exporting = await createTracing("x", { exporter: new InMemorySpanExporter() });
    expect(tracerOption(exporting)).toEqual({ tracer: exporting.tracer });
    const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    try {
      expect(tracerOption(await createTracing("x"))).toEqual({});
    } finally {
      if (saved !== undefined) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
    }
  });

  it("says whether spans go anywhere: an exporter or an endpoint, else nothing exports them", async () => {
    expect((await createTracing("x", { exporter: new InMemorySpanExporter() })).exporting).toBe(true);
    expect((await createTracing("x", { endpoint: "http://127.0.0.1:4318" })).exporting).toBe(true);
    const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    try {
      const idle = await createTracing("x");
      expect(idle.exporting).toBe(false);
      // Nothing exports: no SDK behind the tracer (it is not loaded), so spans record nothing,
      // yet a child still carries the turn's derived trace.
      const span = idle.tracer.startSpan("s", {}, turnContext("/a", 3));
      expect(span.isRecording()).toBe(false);
      expect(span.spanContext().traceId).toBe(turnTraceId("/a", 3));
      span.end();
    } finally {
      if (saved !== undefined) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
    }
  });

  it("records a failing span as an error and rethrows", async () => {
    const exporter = new InMemorySpanExporter();
    const { tracer } = await createTracing("x", { exporter });
    await expect(inSpan(tracer, "boom", turnContext("/a", 1), {}, async () => Promise.reject(new Error("nope")))).rejects.toThrow("nope");
    expect(exporter.getFinishedSpans()[0]!.status).toMatchObject({ code: 2, message: "nope" });
  });

  it("reads the trigger from a request key and nothing else", () => {
    expect(triggerOffsetOfRequestKey("agent/request/7")).toBe(7);
    expect(triggerOffsetOfRequestKey("agent/settle/7")).toBeUndefined();
    expect(triggerOffsetOfRequestKey(undefined)).toBeUndefined();
  });
});
