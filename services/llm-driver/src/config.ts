// The driver's environment, parsed once at start-up. `LLM_PROVIDERS` is JSON, or a path to a
// JSON file; `OPENAI_BASE_URL` / `OPENAI_API_KEY` are the shorthand for one `openai`
// provider. With neither, the offline model answers.

import { readFileSync } from "node:fs";
import { baseServiceConfigSchema, DEFAULT_CLAIM_PROBE_MS, streamQuotaConfigShape } from "@agentrt/service-kit";
import { z } from "zod";
import { ProviderConfigError } from "./errors.ts";
import { resolveProviders, type ProvidersConfig } from "./providers.ts";
import { DEFAULT_CONTEXT_WINDOWS, type ContextWindowTable } from "./usage.ts";

const ms = (fallback: number) => z.coerce.number().int().min(1).default(fallback);

/**
 * A claim whose driver stops heartbeating is redelivered this long after its last heartbeat.
 * A killed driver's turn does not wait for it: its connection closes, and another driver finds
 * it gone within `LLM_CLAIM_PROBE_MS` and hands the item back (work claims). The ack wait is the
 * backstop for a driver that froze or was cut off: six heartbeats fit in the window, so a live
 * driver must miss all of them (an event-loop stall of over 1.25 s) before a twin starts on its
 * request, and even then the keyed settlement lets only one answer land.
 */
export const DEFAULT_WORK_ACK_WAIT_MS = 1_500;
export const DEFAULT_WORK_HEARTBEAT_MS = 250;

/**
 * How long a stopping driver lets its model calls run on (LLM_DRAIN_MS): most replies end well
 * within it, so a rollout neither cuts them off nor pays for them twice; a longer one goes back
 * to the queue, its model call made again by another driver.
 */
export const DEFAULT_DRAIN_MS = 30_000;

export const driverConfigSchema = baseServiceConfigSchema(9465).extend({
  LLM_PROVIDERS: z.string().optional(),
  OPENAI_BASE_URL: z.url().optional(),
  OPENAI_API_KEY: z.string().optional(),
  /** The shorthand provider's own name for every `openai/…` model (a local server's loaded model). */
  OPENAI_MODEL: z.string().min(1).optional(),
  /** JSON `{ "<model prefix>": tokens, ..., "*": defaultTokens }`. */
  LLM_CONTEXT_WINDOWS: z.string().optional(),
  LLM_IDLE_TIMEOUT_MS: ms(45_000),
  /** A claim whose driver stops heartbeating is redelivered after this: a killed driver's turn resumes within seconds. */
  LLM_WORK_ACK_WAIT_MS: ms(DEFAULT_WORK_ACK_WAIT_MS),
  LLM_WORK_HEARTBEAT_MS: ms(DEFAULT_WORK_HEARTBEAT_MS),
  /** Other drivers' claims are probed this often: a killed driver's turn is re-driven within about this. */
  LLM_CLAIM_PROBE_MS: ms(DEFAULT_CLAIM_PROBE_MS),
  /** Keep driven streams in memory, current via the partition feed (off: read every turn). */
  LLM_STREAM_CACHE: z.enum(["on", "off"]).default("on"),
  LLM_STREAM_CACHE_MAX_STREAMS: z.coerce.number().int().min(1).default(2_000),
  /** Bound on the cached events (their JSON size), all streams together. */
  LLM_STREAM_CACHE_MAX_BYTES: z.coerce.number().int().min(1024).default(64 * 1024 * 1024),
  /** A stream no turn used for this long is dropped from the cache (read again on its next turn). */
  LLM_STREAM_CACHE_IDLE_MS: ms(60_000),
  LLM_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(32),
  /** On SIGTERM, how long the model calls under way may run on to their end; those left then go to another driver (0: at once). */
  LLM_DRAIN_MS: z.coerce.number().int().min(0).max(3_600_000).default(DEFAULT_DRAIN_MS),
  /** Slots past LLM_CONCURRENCY for a provider and tenant running fewer than two calls (default half of it; 0: LLM_CONCURRENCY is a hard bound). */
  LLM_SPARE_SLOTS: z.coerce.number().int().min(0).max(1024).optional(),
  /** The tenant of a stream, as the quotas count it: the driver's slots are shared fairly between tenants (and providers). */
  AGENT_TENANT_DEPTH: streamQuotaConfigShape.AGENT_TENANT_DEPTH,
});

export type DriverConfig = z.infer<typeof driverConfigSchema>;

export function providersFromConfig(config: DriverConfig): ProvidersConfig {
  return resolveProviders({
    providersJson: config.LLM_PROVIDERS === undefined ? undefined : readJsonOrFile("LLM_PROVIDERS", config.LLM_PROVIDERS),
    openaiBaseUrl: config.OPENAI_BASE_URL,
    openaiApiKey: config.OPENAI_API_KEY,
    openaiModel: config.OPENAI_MODEL,
  });
}

const windowsSchema = z.record(z.string(), z.number().int().positive());

export function contextWindowsFromConfig(config: DriverConfig): ContextWindowTable {
  if (config.LLM_CONTEXT_WINDOWS === undefined) return DEFAULT_CONTEXT_WINDOWS;
  const parsed = windowsSchema.safeParse(readJsonOrFile("LLM_CONTEXT_WINDOWS", config.LLM_CONTEXT_WINDOWS));
  if (!parsed.success) {
    throw new ProviderConfigError(`LLM_CONTEXT_WINDOWS must map model prefixes to positive integers: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  }
  const { "*": fallback, ...byPrefix } = parsed.data;
  return { byPrefix, defaultTokens: fallback ?? DEFAULT_CONTEXT_WINDOWS.defaultTokens };
}

function readJsonOrFile(name: string, value: string): unknown {
  const text = value.trimStart().startsWith("{") ? value : readFileOrThrow(name, value);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ProviderConfigError(`${name} is not valid JSON: ${(error as Error).message}`, error);
  }
}

function readFileOrThrow(name: string, path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new ProviderConfigError(`${name} is neither JSON nor a readable file: ${path}`, error);
  }
}
