// The capability host's environment, parsed once at start-up (a bad value fails fast naming
// the variable and the rule).

import { baseServiceConfigSchema, DEFAULT_CLAIM_PROBE_MS, STREAM_CACHE_DEFAULTS, streamQuotaConfigShape } from "@agentrt/service-kit";
import { z } from "zod";
import { DEFAULT_FILE_QUOTA, DEFAULT_KV_QUOTA } from "./itx/agent-storage.ts";

const int = (min: number, fallback: number) => z.coerce.number().int().min(min).default(fallback);

/** Defaults of the two recovery settings below (also the in-process fallbacks of `CapabilityHost`). */
export const DEFAULT_SCRIPT_WORK_ACK_WAIT_MS = 1_500;
export const DEFAULT_HOST_LIVENESS_TTL_MS = 2_000;

export const hostConfigSchema = baseServiceConfigSchema(9_103).extend({
  /** Scripts run at once by this process. */
  SCRIPT_CONCURRENCY: int(1, 4),
  /** Scripts of one agent run at once by this process (an agent's flood waits behind its own limit). */
  SCRIPT_CONCURRENCY_PER_AGENT: int(1, 2),
  /** Scripts of one tenant (all its agents) run at once by this process (default: all but a quarter of `SCRIPT_CONCURRENCY`, leaving at least one: 3 of 4). */
  SCRIPT_CONCURRENCY_PER_TENANT: z.coerce.number().int().min(1).optional(),
  /**
   * A claimed script's heartbeat window: a host that stops heartbeating (frozen, cut off) has its
   * item redelivered after this; the other replica then checks the host's liveness lease. A killed
   * host's items do not wait for it: its connection closes and another host hands them back
   * within `SCRIPT_CLAIM_PROBE_MS` (work claims).
   */
  SCRIPT_WORK_ACK_WAIT_MS: int(1_000, DEFAULT_SCRIPT_WORK_ACK_WAIT_MS),
  /** Other hosts' claims are probed this often: a killed host's scripts move on within about this. */
  SCRIPT_CLAIM_PROBE_MS: int(10, DEFAULT_CLAIM_PROBE_MS),
  /** Budget of one typecheck; a checker not finished by then settles the script `typecheck` (not run). */
  SCRIPT_TYPECHECK_BUDGET_MS: int(10, 2_000),
  /** Typecheck worker threads, each with a warm checker (a script holds one for at most the budget). */
  SCRIPT_TYPECHECK_WORKERS: int(1, 2),
  /** Largest script source, UTF-8 bytes; a longer one settles `typecheck` without being checked. */
  SCRIPT_MAX_SOURCE_BYTES: int(1_024, 64 * 1024),
  /**
   * The host's liveness lease: a replica settles this host's running scripts `orphaned` only once
   * its connection is gone (its presence subject has no responders: killed) or the lease lapsed
   * (frozen or cut off; refreshed every third of it from a thread that scripts and checks never block; a
   * host starved of CPU for longer than this counts as dead, and its late settlement stands down).
   */
  HOST_LIVENESS_TTL_MS: int(1_000, DEFAULT_HOST_LIVENESS_TTL_MS),
  /** Upper bound of a run whatever expiresAt allows. */
  SCRIPT_MAX_RUN_MS: int(100, 120_000),
  SCRIPT_MEMORY_LIMIT_MB: int(8, 64),
  SCRIPT_STACK_LIMIT_KB: int(64, 512),
  /** Longest synchronous stretch of a script (a script that never awaits is stopped after it). */
  SCRIPT_MAX_SYNC_SLICE_MS: int(100, 10_000),
  PROVIDER_CALL_TIMEOUT_MS: int(100, 30_000),
  /** What one agent's workspace (itx.files) may hold: its files' bytes together, and how many files. */
  AGENT_FILES_QUOTA_BYTES: int(1, DEFAULT_FILE_QUOTA.bytes),
  AGENT_FILES_QUOTA_FILES: int(1, DEFAULT_FILE_QUOTA.entries),
  /** What one agent's itx.kv may hold: its values' bytes together, and how many keys. */
  AGENT_KV_QUOTA_BYTES: int(1, DEFAULT_KV_QUOTA.bytes),
  AGENT_KV_QUOTA_KEYS: int(1, DEFAULT_KV_QUOTA.entries),
  ...streamQuotaConfigShape,
  /**
   * Keep the streams scripts were asked for in memory, current via the event store's feed, so a
   * script reads only what its stream gained since the last (off: every script reads its whole
   * stream, which past 8 records creates a JetStream consumer, through the meta leader on a cluster).
   */
  SCRIPT_STREAM_CACHE: z.enum(["on", "off"]).default("on"),
  SCRIPT_STREAM_CACHE_MAX_STREAMS: int(1, STREAM_CACHE_DEFAULTS.maxStreams),
  /** Bound on the cached events (their JSON size), all streams together (half the driver's: a host's memory goes to sandboxes first). */
  SCRIPT_STREAM_CACHE_MAX_BYTES: int(1024, 32 * 1024 * 1024),
  /** A stream no script used for this long is dropped from the cache (read again for its next script). */
  SCRIPT_STREAM_CACHE_IDLE_MS: int(1_000, STREAM_CACHE_DEFAULTS.idleMs),
  /** A tagged prompt file (`<section key="…">` blocks): sub-agents created by scripts get the birth batch. */
  PROJECT_PROMPT_FILE: z.string().min(1).optional(),
  PROJECT_NAME: z.string().min(1).default("demo"),
  PROJECT_SLUG: z.string().regex(/^[a-z0-9-]+$/, "lower-case letters, digits and -").default("demo"),
  PROJECT_CONFIG_REPO: z.string().min(1).default("/repos/config"),
});

export type HostConfig = z.infer<typeof hostConfigSchema>;
