// @agentrt/service-kit: what every service process shares — config, logging, metrics, the
// ops endpoint, the NATS connection, graceful shutdown, work queues and partition leases.
export * from "./config.ts";
export * from "./base-config.ts";
export * from "./logger.ts";
export * from "./metrics.ts";
export * from "./ops-server.ts";
export * from "./readiness.ts";
export * from "./nats.ts";
export * from "./nats-urls.ts";
export * from "./run-service.ts";
export * from "./work-queue.ts";
export * from "./transient-retry.ts";
export * from "./leases.ts";
export * from "./work-claims.ts";
export * from "./tracing.ts";
export * from "./nats-permissions.ts";
export * from "./event-signing.ts";
export * from "./interrupts.ts";
export * from "./json.ts";
export * from "./json-pieces.ts";
export * from "./stream-cache.ts";
export * from "./timers.ts";
export * from "./fair-share.ts";
