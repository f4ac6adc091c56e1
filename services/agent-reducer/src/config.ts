// The reducer's environment, parsed once at start-up.
import { z } from "zod";

export const reducerConfigSchema = z.object({
  NATS_URL: z.string().default("nats://127.0.0.1:4222"),
  OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  LOG_LEVEL: z.string().default("info"),
  PARTITION_COUNT: z.coerce.number().int().min(1).max(1024).default(64),
  NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  REDUCER_ID: z.string().min(1).optional(),
  REDUCER_LEASE_TTL_MS: z.coerce.number().int().min(500).default(6000),
  REDUCER_SNAPSHOT_EVERY_EVENTS: z.coerce.number().int().min(1).default(2000),
  PROJECT_WORKER: z.enum(["on", "off"]).default("on"),
  /** The project's AGENTS.md, injected by the worker's birth reaction (default: the demo text). */
  PROJECT_AGENTS_MD_FILE: z.string().optional(),
  REDUCER_INTERRUPT_TIMEOUT_MS: z.coerce.number().int().min(50).default(1500),
});

export type ReducerConfig = z.infer<typeof reducerConfigSchema>;
