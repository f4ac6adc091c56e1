// The gateway's environment, parsed once at start-up.
import { baseServiceConfigSchema, streamQuotaConfigShape } from "@agentrt/service-kit";
import { z } from "zod";

const port = z.coerce.number().int().min(0).max(65535);

export const gatewayConfigSchema = baseServiceConfigSchema(9467).extend({
  HTTP_HOST: z.string().default("127.0.0.1"),
  HTTP_PORT: port.default(8080),
  GRPC_PORT: port.default(8081),
  /** JSON file `{keys: [...]}` of hashed API keys (see `pnpm agents keys create`). */
  AGENTRT_KEYS_FILE: z.string().optional(),
  /** How often the keys file is read again: a key added, rotated or revoked there takes effect this soon (0: never). */
  AGENTRT_KEYS_RELOAD_MS: z.coerce.number().int().min(0).default(10_000),
  /** The same document inline, for secrets mounted as env. */
  AGENTRT_KEYS_JSON: z.string().optional(),
  /** `1` runs without auth; refused unless HTTP_HOST is loopback. */
  AGENTRT_DEV_MODE: z.enum(["0", "1"]).default("0"),
  RATE_LIMIT_PER_SECOND: z.coerce.number().positive().default(50),
  RATE_LIMIT_BURST: z.coerce.number().int().positive().default(200),
  MAX_BODY_BYTES: z.coerce.number().int().positive().default(1_048_576),
  /** Deepest JSON nesting accepted in a body or a gRPC payload_json (400 past it). */
  MAX_JSON_DEPTH: z.coerce.number().int().min(2).max(10_000).default(64),
  /** Concurrent SSE + WebSocket + gRPC subscriptions per key (per client address in dev mode); 429 past it. */
  MAX_LIVE_SUBSCRIPTIONS_PER_KEY: z.coerce.number().int().positive().default(32),
  /**
   * Connections each listener (HTTP, gRPC) holds at once; one past it is closed as it arrives,
   * so a flood of connections cannot spend the gateway's file descriptors and memory.
   */
  MAX_CONNECTIONS: z.coerce.number().int().positive().default(10_000),
  /** Time to receive a request's headers; a slower socket is closed. */
  HEADERS_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  /** Time to receive a whole request, body included (live streams are not affected). */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Idle time of a kept-alive connection between requests. */
  KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  /** Largest event JSON an append may carry (413 `event_too_large`); large data belongs in files. */
  MAX_EVENT_BYTES: z.coerce.number().int().positive().default(1_048_576),
  /** Bytes of events one read page returns at most (it ends early; `nextOffset` continues). */
  MAX_READ_PAGE_BYTES: z.coerce.number().int().positive().default(4_194_304),
  /** Bytes of events one agents-list page may fold before it ends early with `next`. */
  MAX_LIST_FOLD_BYTES: z.coerce.number().int().positive().default(16_777_216),
  /** Expensive reads (pages, folds, listings) one API key runs at once; the rest wait their turn. */
  READS_PER_KEY: z.coerce.number().int().positive().default(2),
  /** Expensive reads the gateway runs at once, all keys together. */
  READS_TOTAL: z.coerce.number().int().positive().default(8),
  /** Bytes of events folded into the states kept between requests, all together (the least recently used are dropped). */
  STATE_CACHE_BYTES: z.coerce.number().int().positive().default(268_435_456),
  ...streamQuotaConfigShape,
  /** Where the built UI lives (default: ui/dist next to src). */
  UI_DIST_DIR: z.string().optional(),
  /**
   * After SIGTERM: answer /readyz 503 but keep serving this long, so load balancers and Service
   * endpoints stop sending new traffic before the listeners close (the chart sets it).
   */
  SHUTDOWN_DELAY_MS: z.coerce.number().int().min(0).max(300_000).default(0),
  /** `0` skips building the UI on start when dist is missing. */
  UI_BUILD_ON_START: z.enum(["0", "1"]).default("1"),
});

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
