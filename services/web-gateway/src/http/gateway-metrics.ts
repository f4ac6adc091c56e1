// The gateway's Prometheus metrics: request latency by route and status, and the live
// subscribers currently open per transport (what the fan-out costs).

import type { Metrics } from "@agentrt/service-kit";

export interface GatewayMetrics {
  observeRequest(route: string, status: number, seconds: number): void;
  liveOpened(transport: "sse" | "websocket" | "grpc"): void;
  liveClosed(transport: "sse" | "websocket" | "grpc"): void;
}

export const NO_METRICS: GatewayMetrics = { observeRequest: () => {}, liveOpened: () => {}, liveClosed: () => {} };

export function gatewayMetrics(metrics: Metrics): GatewayMetrics {
  const requests = metrics.histogram("agentrt_gateway_request_seconds", "HTTP API request latency (JSON routes, and refused live streams)", ["route", "status"]);
  const live = metrics.gauge("agentrt_gateway_live_subscribers", "Open live subscriptions", ["transport"]);
  return {
    observeRequest: (route, status, seconds) => requests.labels(route, String(status)).observe(seconds),
    liveOpened: (transport) => live.labels(transport).inc(),
    liveClosed: (transport) => live.labels(transport).dec(),
  };
}
