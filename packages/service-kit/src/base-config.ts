// The environment every service reads: where NATS is and who it connects as, where the ops
// endpoint listens, logging, and the deployment's partition and replica counts. Each service
// extends this with its own keys, so a name means the same thing in every service and the
// chart sets it once.

import { DEFAULT_STREAM_QUOTA, DEFAULT_TENANT_QUOTA, type EventStore, StreamQuota, type UsageLedger } from "@agentrt/streams";
import type { Logger } from "./logger.ts";
import { z } from "zod";

const port = z.coerce.number().int().min(0).max(65_535);

/** The base keys; `opsPort` is the service's default ops port. */
export function baseServiceConfigSchema(opsPort: number) {
  return z.object({
    NATS_URL: z.string().min(1).default("nats://127.0.0.1:4222"),
    /** The service's own NATS user (per-service permissions); unset connects anonymously. */
    NATS_USER: z.string().min(1).optional(),
    NATS_PASSWORD: z.string().min(1).optional(),
    /** Bind address of /healthz, /readyz, /metrics. Loopback by default; `0.0.0.0` in a pod. */
    OPS_HOST: z.string().min(1).default("127.0.0.1"),
    OPS_PORT: port.default(opsPort),
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    PARTITION_COUNT: z.coerce.number().int().min(1).max(1024).default(64),
    NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
    /**
     * Directory of the services' event keys (event-signing.ts): each record is signed by its
     * service and only records signed so are read. Unset: nothing is signed or checked.
     */
    EVENT_KEYS_DIR: z.string().min(1).optional(),
  });
}

export type BaseServiceConfig = z.infer<ReturnType<typeof baseServiceConfigSchema>>;

/** The connection options a service's base config names. */
export function natsConnectionOptions(config: BaseServiceConfig): { url: string; user?: string; pass?: string } {
  return {
    url: config.NATS_URL,
    ...(config.NATS_USER === undefined ? {} : { user: config.NATS_USER }),
    ...(config.NATS_PASSWORD === undefined ? {} : { pass: config.NATS_PASSWORD }),
  };
}

/**
 * The event stream quotas (`StreamQuota`), for the services that append from outside the
 * machinery: the gateway (API keys) and the capability host (scripts). Both read the same keys.
 */
export const streamQuotaConfigShape = {
  /** Bytes of event JSON one agent's stream may hold before appends from keys and scripts are refused (403 `quota_exceeded`). */
  AGENT_STREAM_QUOTA_BYTES: z.coerce.number().int().positive().default(DEFAULT_STREAM_QUOTA.bytes),
  /** Events one agent's stream may hold, likewise. */
  AGENT_STREAM_QUOTA_EVENTS: z.coerce.number().int().positive().default(DEFAULT_STREAM_QUOTA.events),
  /** Leading path segments naming a stream's tenant (`/agents/acme` at 2); `0` turns tenant quotas off. */
  AGENT_TENANT_DEPTH: z.coerce.number().int().min(0).max(64).default(DEFAULT_TENANT_QUOTA.depth),
  /** Bytes of event JSON all of one tenant's streams may hold together. */
  AGENT_TENANT_QUOTA_BYTES: z.coerce.number().int().positive().default(DEFAULT_TENANT_QUOTA.bytes),
  /** Streams one tenant may hold. */
  AGENT_TENANT_QUOTA_STREAMS: z.coerce.number().int().positive().default(DEFAULT_TENANT_QUOTA.streams),
};

type StreamQuotaConfig = { [K in keyof typeof streamQuotaConfigShape]: number };

/**
 * The quotas the config names, counted through `reads` into its store's shared ledger; a count that
 * fails is logged (the next append counts again).
 */
export function configuredStreamQuota(config: StreamQuotaConfig, reads: Pick<EventStore, "read" | "lastOffset"> & { readonly usageLedger: UsageLedger }, logger: Logger): StreamQuota {
  return new StreamQuota(reads, {
    limits: { bytes: config.AGENT_STREAM_QUOTA_BYTES, events: config.AGENT_STREAM_QUOTA_EVENTS },
    tenantLimits: { depth: config.AGENT_TENANT_DEPTH, bytes: config.AGENT_TENANT_QUOTA_BYTES, streams: config.AGENT_TENANT_QUOTA_STREAMS },
    ledger: reads.usageLedger,
    onError: (error, streamPath) => logger.warn({ err: error, streamPath }, "counting a stream's usage failed; the next append counts again"),
  });
}
