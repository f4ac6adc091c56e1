// The gateway's environment, parsed once at start-up.
import { baseServiceConfigSchema } from "@agentrt/service-kit";
import { z } from "zod";

const port = z.coerce.number().int().min(0).max(65535);

export const gatewayConfigSchema = baseServiceConfigSchema(9467).extend({
  HTTP_HOST: z.string().default("127.0.0.1"),
  HTTP_PORT: port.default(8080),
  GRPC_PORT: port.default(8081),
  /** JSON file `{keys: [...]}` of hashed API keys (see `pnpm agents keys create`). */
  AGENTRT_KEYS_FILE: z.string().optional(),
  /** The same document inline, for secrets mounted as env. */
  AGENTRT_KEYS_JSON: z.string().optional(),
  /** `1` runs without auth; refused unless HTTP_HOST is loopback. */
  AGENTRT_DEV_MODE: z.enum(["0", "1"]).default("0"),
  RATE_LIMIT_PER_SECOND: z.coerce.number().positive().default(50),
  RATE_LIMIT_BURST: z.coerce.number().int().positive().default(200),
  MAX_BODY_BYTES: z.coerce.number().int().positive().default(1_048_576),
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
