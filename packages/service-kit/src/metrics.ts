// Prometheus metrics: one registry per service with default process metrics and the
// service name as a default label, so every metric of the system can be told apart.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export interface Metrics {
  readonly registry: Registry;
  counter(name: string, help: string, labelNames?: readonly string[]): Counter<string>;
  /** `read`, when given, sets an unlabelled gauge's value at every scrape. */
  gauge(name: string, help: string, labelNames?: readonly string[], read?: () => number): Gauge<string>;
  histogram(name: string, help: string, labelNames?: readonly string[], buckets?: number[]): Histogram<string>;
}

export const LATENCY_BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export function createMetrics(service: string, options: { collectDefaults?: boolean } = {}): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (options.collectDefaults !== false) collectDefaultMetrics({ register: registry, prefix: "agentrt_" });
  // A name asked for again gets the metric already registered (an llm-driver run inside the
  // reducer's process shares its registry, and both count refused appends).
  const existing = <M>(name: string): M | undefined => registry.getSingleMetric(name) as M | undefined;
  return {
    registry,
    counter: (name, help, labelNames = []) => existing<Counter<string>>(name) ?? new Counter({ name, help, labelNames: [...labelNames], registers: [registry] }),
    gauge: (name, help, labelNames = [], read) =>
      existing<Gauge<string>>(name) ??
      new Gauge({
        name,
        help,
        labelNames: [...labelNames],
        registers: [registry],
        ...(read === undefined
          ? {}
          : {
              collect(this: Gauge<string>) {
                this.set(read());
              },
            }),
      }),
    histogram: (name, help, labelNames = [], buckets = LATENCY_BUCKETS_SECONDS) =>
      existing<Histogram<string>>(name) ?? new Histogram({ name, help, labelNames: [...labelNames], buckets, registers: [registry] }),
  };
}

/** The store client's refusals (an event type the service does not emit), counted per type. */
export function countRefusedAppends(metrics: Metrics, service: string): (type: string) => void {
  const refused = metrics.counter("agentrt_store_refused_appends_total", "Appends refused by the store client: type not emitted by this service", ["service", "type"]);
  return (type) => refused.inc({ service, type });
}
