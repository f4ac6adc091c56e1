// Assembles the HTTP side of the gateway: routes, auth, the live streams and the UI, on one
// node:http server. Transport-only; the operations live in GatewayApi.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Tracer } from "@opentelemetry/api";
import type { Logger } from "@agentrt/service-kit";
import type { EventStore, StreamQuota } from "@agentrt/streams";
import type { AgentCorePort } from "./api/agent-core-port.ts";
import { GatewayApi } from "./api/gateway-api.ts";
import { buildOpenApi } from "./api/openapi.ts";
import type { ReadLimits } from "./api/read-limits.ts";
import { buildRoutes } from "./api/routes.ts";
import type { Authenticator } from "./auth/authenticator.ts";
import { DEFAULT_MAX_BODY_BYTES } from "./http/body.ts";
import { capConnections, DEFAULT_MAX_CONNECTIONS } from "./http/connection-cap.ts";
import { NO_METRICS, type GatewayMetrics } from "./http/gateway-metrics.ts";
import { createUpgradeHandler, type LiveTimings } from "./http/live.ts";
import { DEFAULT_MAX_JSON_DEPTH } from "./http/json-limits.ts";
import { DEFAULT_MAX_LIVE_SUBSCRIPTIONS_PER_KEY, LiveSubscriptionLimiter } from "./http/live-limits.ts";
import { handleHttp, sendError, type PipelineDeps } from "./http/pipeline.ts";
import type { Route } from "./http/router.ts";
import { DEFAULT_TIMEOUTS, guardServer, serverOptions, type ConnectionTimeouts } from "./http/server-guards.ts";
import { serveUi } from "./http/static-ui.ts";
import { assertDevModeAddressing, setBrowserHeaders } from "./http/browser-guards.ts";

export interface GatewayOptions<S> {
  readonly store: EventStore;
  /** Where reads, folds and listings go (default `store`); see GatewayApiOptions. */
  readonly readStore?: EventStore;
  readonly limits?: Partial<ReadLimits>;
  /** Each agent's stream held to a quota (see GatewayApiOptions). */
  readonly quota?: StreamQuota;
  readonly core: AgentCorePort<S>;
  readonly auth: Authenticator;
  readonly log: Logger;
  /** The built UI (Vite `dist`); omitted → no UI routes. */
  readonly uiDistDir?: string;
  readonly maxBodyBytes?: number;
  readonly metrics?: GatewayMetrics;
  readonly tracer?: Tracer;
  readonly maxJsonDepth?: number;
  readonly maxLiveSubscriptionsPerKey?: number;
  /** WebSocket heartbeat and close grace (default 15 s and 5 s). */
  readonly liveTimings?: LiveTimings;
  /** Connections the HTTP listener holds at once (default 10 000); one past it is closed as it arrives. */
  readonly maxConnections?: number;
  readonly timeouts?: ConnectionTimeouts;
}

export interface HttpGateway {
  readonly server: Server;
  readonly routes: readonly Route[];
  readonly api: GatewayApi;
  /** The per-key live-subscription cap; pass it to the gRPC server so both count together. */
  readonly liveLimiter: LiveSubscriptionLimiter;
  listen(port: number, host: string): Promise<number>;
  close(): Promise<void>;
}

export function createHttpGateway<S>(options: GatewayOptions<S>): HttpGateway {
  const api = new GatewayApi(options.store, options.core, options.tracer, {
    ...(options.readStore === undefined ? {} : { readStore: options.readStore }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(options.quota === undefined ? {} : { quota: options.quota }),
  }) as GatewayApi;
  // The document describes the routes it is served by, so it is built from them lazily.
  let openApi: unknown = null;
  const routes = buildRoutes(api, () => (openApi ??= buildOpenApi(routes)));
  const liveLimiter = new LiveSubscriptionLimiter(options.maxLiveSubscriptionsPerKey ?? DEFAULT_MAX_LIVE_SUBSCRIPTIONS_PER_KEY);
  const deps: PipelineDeps = {
    routes,
    auth: options.auth,
    log: options.log,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    metrics: options.metrics ?? NO_METRICS,
    maxJsonDepth: options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH,
    liveLimiter,
  };
  const upgrades = createUpgradeHandler(deps, options.log, options.liveTimings);
  // Each handler settles its own errors; these catches only make a bug a 500 instead of a crash.
  const server = createServer(serverOptions(options.timeouts ?? DEFAULT_TIMEOUTS), (req, res) => {
    setBrowserHeaders(res);
    const isApi = (req.url ?? "/").startsWith("/v1/");
    const uiDistDir = options.uiDistDir;
    const handled = !isApi && uiDistDir !== undefined && req.method === "GET" ? serveUiGuarded(deps, uiDistDir, req, res) : handleHttp(deps, req, res);
    handled.catch((error: unknown) => sendError(deps, req, res, error));
  });
  guardServer(server, options.log, options.timeouts ?? DEFAULT_TIMEOUTS);
  capConnections(server, { max: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS, listener: "http", log: options.log, onDrop: () => deps.metrics.connectionDropped("http") });
  server.on("upgrade", (req, socket, head) => void upgrades.handler(req, socket, head));
  return {
    server,
    routes,
    api,
    liveLimiter,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
      }),
    close: async () => {
      upgrades.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The UI's files answer dev mode's loopback addressing rule as the API does (a rebound name reads nothing). */
async function serveUiGuarded(deps: PipelineDeps, distDir: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (deps.auth.devMode) assertDevModeAddressing(req.headers);
  await serveUi(distDir, req, res);
}
