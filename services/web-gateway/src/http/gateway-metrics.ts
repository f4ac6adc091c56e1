// The gateway's Prometheus metrics: request latency by route and status, the live
// subscribers currently open per transport (what the fan-out costs), and the connections
// closed on arrival because a listener held its most.

import type { Metrics } from "@agentrt/service-kit";

export interface GatewayMetrics {
  observeRequest(route: string, status: number, seconds: number): void;
  liveOpened(transport: "sse" | "websocket" | "grpc"): void;
  liveClosed(transport: "sse" | "websocket" | "grpc"): void;
  connectionDropped(listener: "http" | "grpc"): void;
}

export const NO_METRICS: GatewayMetrics = { observeRequest: () => {}, liveOpened: () => {}, liveClosed: () => {}, connectionDropped: () => {} };

export function gatewayMetrics(metrics: Metrics): GatewayMetrics {
  const requests = metrics.histogram("agentrt_gateway_request_seconds", "HTTP API request latency (JSON routes, and refused live streams)", ["route", "status"]);
  const live = metrics.gauge("agentrt_gateway_live_subscribers", "Open live subscriptions", ["transport"]);
  const dropped = metrics.counter("agentrt_gateway_connections_dropped_total", "Connections closed on arrival: the listener held MAX_CONNECTIONS", ["listener"]);
  return {
    observeRequest: (route, status, seconds) => requests.labels(route, String(status)).observe(seconds),
    liveOpened: (transport) => live.labels(transport).inc(),
    liveClosed: (transport) => live.labels(transport).dec(),
    connectionDropped: (listener) => dropped.labels(listener).inc(),
  };
}
