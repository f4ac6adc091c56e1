// The reducer's environment, parsed once at start-up.
import { DEFAULT_LEASE_TTL_MS, baseServiceConfigSchema, invalidConfig, loadConfig } from "@agentrt/service-kit";
import { DEFAULT_REDRIVE_AFTER_MS } from "@agentrt/agent-core";
import { type DriverConfig, driverConfigSchema } from "@agentrt/llm-driver";
import { z } from "zod";

export const reducerConfigSchema = baseServiceConfigSchema(9464).extend({
  REDUCER_ID: z.string().min(1).optional(),
  /**
   * Backstop for a replica that vanished without its connection closing (a host or network
   * failure). A killed process is detected faster: its liveness subject stops answering.
   */
  REDUCER_LEASE_TTL_MS: z.coerce.number().int().min(500).default(DEFAULT_LEASE_TTL_MS),
  /** Snapshot a changed agent after this many events (at its next quiet moment)… */
  REDUCER_SNAPSHOT_EVERY_EVENTS: z.coerce.number().int().min(1).default(2000),
  /** …or once it has been quiet this long. */
  REDUCER_SNAPSHOT_IDLE_MS: z.coerce.number().int().min(1).default(1000),
  /**
   * How often each partition's checkpoint is written when it moved: what a replica that takes
   * the partition over after a crash replays from (every agent in the replay is brought in).
   */
  REDUCER_CHECKPOINT_EVERY_MS: z.coerce.number().int().min(20).default(200),
  /** An agent with nothing pending is dropped from memory after this long idle (rebuilt from its snapshot on its next event). */
  REDUCER_EVICT_IDLE_MS: z.coerce.number().int().min(1).default(30_000),
  PROJECT_WORKER: z.enum(["on", "off"]).default("on"),
  /** The project's AGENTS.md, injected by the worker's birth reaction (default: the demo text). */
  PROJECT_AGENTS_MD_FILE: z.string().optional(),
  /**
   * An agent with an open request or an unsettled script whose stream shows no progress for
   * this long gets its work items issued again (then after twice as long, and so on): the
   * safety net for a work item lost in a failover.
   */
  REDUCER_REDRIVE_AFTER_MS: z.coerce.number().int().min(100).default(DEFAULT_REDRIVE_AFTER_MS),
  REDUCER_INTERRUPT_TIMEOUT_MS: z.coerce.number().int().min(50).default(1500),
  /**
   * `queue`: every request goes to the llm-drivers through the work queue. `in-process`: this
   * process also runs an llm-driver (configured by the driver's own variables, LLM_* and
   * OPENAI_*), which takes the requests of this replica's agents directly while it has room,
   * and the queue's items like any driver.
   */
  REDUCER_LLM_DRIVER: z.enum(["queue", "in-process"]).default("queue"),
  /** The in-process driver's NATS user (its own permissions); required when NATS_USER is set. */
  LLM_DRIVER_NATS_USER: z.string().min(1).optional(),
  LLM_DRIVER_NATS_PASSWORD: z.string().min(1).optional(),
});

export type ReducerConfig = z.infer<typeof reducerConfigSchema>;

/**
 * The reducer's config from the environment: the schema, and what no single key can say (the
 * schema stays a plain object, which the chart's drift test reads key by key).
 */
export function loadReducerConfig(env: NodeJS.ProcessEnv = process.env): ReducerConfig {
  const config = loadConfig(reducerConfigSchema, env);
  if (config.REDUCER_LLM_DRIVER === "in-process" && config.NATS_USER !== undefined && config.LLM_DRIVER_NATS_USER === undefined) {
    throw invalidConfig([
      "LLM_DRIVER_NATS_USER: REDUCER_LLM_DRIVER=in-process with NATS_USER set needs the driver's own NATS user (LLM_DRIVER_NATS_USER, LLM_DRIVER_NATS_PASSWORD): the reducer's may not write a driver's events",
    ]);
  }
  return config;
}

/**
 * The in-process driver's config (REDUCER_LLM_DRIVER=in-process), undefined otherwise: the
 * driver's own variables from the same environment, connecting as its own NATS user.
 */
export function inProcessDriverConfig(config: ReducerConfig, env: NodeJS.ProcessEnv = process.env): DriverConfig | undefined {
  if (config.REDUCER_LLM_DRIVER !== "in-process") return undefined;
  return loadConfig(driverConfigSchema, { ...env, NATS_USER: config.LLM_DRIVER_NATS_USER, NATS_PASSWORD: config.LLM_DRIVER_NATS_PASSWORD });
}
