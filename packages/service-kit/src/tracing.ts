// OpenTelemetry traces that follow one turn across services without any trace header riding
// inside event payloads (they are strict, and the stream is the only thing all services
// share). A turn's trace id is DERIVED: hash(stream path, offset of the triggering event).
// The gateway, the reducer (trigger → request), the driver (request → its key
// `agent/request/<trigger>`) and the host (script → assistant reply → request) all compute the
// same parent, so their spans land in one trace.
//
// Spans export over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise tracing is a
// no-op (the SDK is not even loaded) unless a test passes its own exporter.

import { createHash } from "node:crypto";
import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-base";

export interface Tracing {
  readonly tracer: Tracer;
  /** Spans go somewhere (an endpoint or an exporter); without, a service may skip making them. */
  readonly exporting: boolean;
  shutdown(): Promise<void>;
}

/**
 * The SDK and the OTLP exporter are loaded only when spans go somewhere: left out, a service
 * evaluates about a sixth less at start-up (a restarted driver resumes a killed one's turn that
 * much sooner), and its spans are the API's no-op ones, which still carry a parent's context.
 */
export async function createTracing(
  service: string,
  options: { endpoint?: string; exporter?: SpanExporter } = {},
): Promise<Tracing> {
  const endpoint = options.endpoint ?? process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (options.exporter === undefined && !endpoint) {
    return { tracer: trace.getTracer(service), exporting: false, shutdown: () => Promise.resolve() };
  }
  const [{ BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor }, { resourceFromAttributes }] = await Promise.all([
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/resources"),
  ]);
  const processors: SpanProcessor[] = [];
  if (options.exporter) processors.push(new SimpleSpanProcessor(options.exporter));
  else if (endpoint) {
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
    processors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint.replace(/\/$/, "")}/v1/traces` })));
  }
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": service }),
    spanProcessors: processors,
  });
  return { tracer: provider.getTracer(service), exporting: true, shutdown: () => provider.shutdown() };
}

/**
 * What a service hands its components as their tracer: the tracer when spans go somewhere,
 * nothing otherwise. A span nobody exports still costs CPU on every turn it wraps (the turn's
 * derived context, two hashes, a span object), and every component skips tracing without one.
 */
export function tracerOption(tracing: Tracing): { tracer?: Tracer } {
  return tracing.exporting ? { tracer: tracing.tracer } : {};
}

function hex(input: string, length: number): string {
  return createHash("sha256").update(input).digest("hex").slice(0, length);
}

/** The trace of the turn started by the event at `triggerOffset` on `streamPath`. */
export function turnContext(streamPath: string, triggerOffset: number): Context {
  const seed = `${streamPath}#${triggerOffset}`;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: hex(`trace:${seed}`, 32),
    spanId: hex(`span:${seed}`, 16),
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });
}

export function turnTraceId(streamPath: string, triggerOffset: number): string {
  return hex(`trace:${streamPath}#${triggerOffset}`, 32);
}

// The request key's format belongs to the contract's reserved key namespaces; re-exported here
// because the services reach it through their tracing helpers.
export { triggerOffsetOfRequestKey } from "@agentrt/contract";

/** Runs `fn` inside a span that is a child of `parent`, recording errors. */
export async function inSpan<T>(
  tracer: Tracer,
  name: string,
  parent: Context,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(name, { attributes }, parent);
  try {
    const result = await fn(span);
    span.setStatus({ code: SpanStatusCode.OK });
    return result;
  } catch (error) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    throw error;
  } finally {
    span.end();
  }
}
