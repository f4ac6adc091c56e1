// The request pipeline every HTTP route goes through, in this order: in dev mode, the loopback
// addressing rule (403, browser-guards.ts) → match (404/405) → authenticate and rate-limit
// (401/429) → parse params, query and body with the route's zod schemas (400/413; a body must
// be declared JSON, 415) → authorise the scope (403) → handle. Errors leave through classifyError.
// The request target is parsed by hand (request-target.ts) and URLs are logged sanitised.

import type { IncomingMessage, ServerResponse } from "node:http";
import { jsonPieces, writeJsonPieces, type Logger } from "@agentrt/service-kit";
import type { z } from "zod";
import { Authenticator, type Principal } from "../auth/authenticator.ts";
import { classifyError, GatewayError, invalidRequest } from "../errors.ts";
import { readJsonBody } from "./body.ts";
import { assertDevModeAddressing } from "./browser-guards.ts";
import type { GatewayMetrics } from "./gateway-metrics.ts";
import { DEFAULT_MAX_JSON_DEPTH } from "./json-limits.ts";
import { LiveSubscriptionLimiter } from "./live-limits.ts";
import { sanitizeUrl } from "./redact.ts";
import { CONTROL, parseRequestTarget } from "./request-target.ts";
import { matchRoute, type JsonRoute, type Route, type RouteInput, type SseRoute, type WebSocketRoute } from "./router.ts";

export interface PipelineDeps {
  readonly routes: readonly Route[];
  readonly auth: Authenticator;
  readonly log: Logger;
  readonly maxBodyBytes: number;
  readonly metrics: GatewayMetrics;
  /** Deepest JSON nesting accepted in a body (400 past it). */
  readonly maxJsonDepth?: number;
  /** The per-key cap on live subscriptions, shared with gRPC; omitted → unlimited. */
  readonly liveLimiter?: LiveSubscriptionLimiter;
}

/** The key in the query string is only for browsers' EventSource and WebSocket. */
function refuseQueryKey(route: Route, query: URLSearchParams): void {
  if (route.kind === "json" && [...query.keys()].some((k) => k.toLowerCase() === "apikey")) {
    throw new GatewayError(
      "unauthenticated",
      "An API key in the query string (?apiKey=) is only accepted on SSE and WebSocket routes; send `Authorization: Bearer <key>` instead.",
      { issues: [{ path: "query.apiKey", message: "only allowed on SSE and WebSocket routes" }] },
    );
  }
}

/** Takes a live-subscription slot for this caller (429 past the cap); returns its release. */
export function acquireLiveSlot(deps: Pick<PipelineDeps, "liveLimiter">, principal: Principal | null, remoteAddress: string | undefined, end?: () => void): () => void {
  if (deps.liveLimiter === undefined) return () => {};
  return deps.liveLimiter.acquire(LiveSubscriptionLimiter.holderOf(principal, remoteAddress), end);
}

/**
 * The query as one value per name. A name given twice is a 400 naming it: a proxy or a cache in
 * front may read the first value where this server would read the last.
 */
export function singleValuedQuery(query: URLSearchParams): Record<string, string> {
  const values = new Map<string, string>();
  const repeated = new Set<string>();
  for (const [name, value] of query) {
    if (values.has(name)) repeated.add(name);
    values.set(name, value);
  }
  // As in the path (request-target.ts): no control characters, raw or encoded (`after=%2Fa%00`).
  const controlled = [...values].filter(([, value]) => CONTROL.test(value)).map(([name]) => name);
  if (controlled.length > 0) {
    throw invalidRequest(
      "query",
      controlled.map((name) => ({ path: `query.${name}`, message: "control characters (such as %00) are not allowed" })),
    );
  }
  if (repeated.size > 0) {
    throw invalidRequest(
      "query",
      [...repeated].map((name) => ({ path: `query.${name}`, message: `given ${query.getAll(name).length} times; give it once` })),
    );
  }
  // fromEntries defines each name as an own property (`__proto__` included), as before.
  return Object.fromEntries(values);
}

export function parseWith<T>(schema: z.ZodType<T> | undefined, value: unknown, what: string): T {
  if (schema === undefined) return value as T;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw invalidRequest(
    what,
    result.error.issues.map((i) => ({ path: [what, ...i.path.map(String)].join("."), message: i.message })),
  );
}

/** Matches and parses a request up to (not including) the handler; shared by HTTP and upgrades. */
export interface Prepared<T extends Route> {
  readonly route: T;
  readonly input: RouteInput;
  readonly principal: Principal | null;
}

const isHttpRoute = (r: Route): r is JsonRoute | SseRoute => r.kind !== "websocket";
const isUpgradeRoute = (r: Route): r is WebSocketRoute => r.kind === "websocket";

export function prepare(deps: PipelineDeps, req: IncomingMessage, kind: "http", onMatched?: (route: Route) => void): Promise<Prepared<JsonRoute | SseRoute>>;
export function prepare(deps: PipelineDeps, req: IncomingMessage, kind: "upgrade", onMatched?: (route: Route) => void): Promise<Prepared<WebSocketRoute>>;
export async function prepare(
  deps: PipelineDeps,
  req: IncomingMessage,
  kind: "http" | "upgrade",
  onMatched: (route: Route) => void = () => {},
): Promise<Prepared<Route>> {
  if (deps.auth.devMode) assertDevModeAddressing(req.headers);
  const url = parseRequestTarget(req.url);
  const match = matchRoute<Route>(kind === "upgrade" ? deps.routes.filter(isUpgradeRoute) : deps.routes.filter(isHttpRoute), req.method ?? "GET", url.pathname);
  if (match === null) throw new GatewayError("not_found", `No route for ${req.method} ${sanitizeUrl(url.pathname)}.`);
  if (match.route === null) {
    throw new GatewayError("method_not_allowed", `${req.method} is not allowed on ${sanitizeUrl(url.pathname)}; use ${match.allowed.join(", ")}.`);
  }
  const route = match.route;
  onMatched(route);
  refuseQueryKey(route, url.query);
  const rawQuery = singleValuedQuery(url.query);
  const principal = route.public === true ? null : deps.auth.authenticate(Authenticator.credentialFrom(req.headers, rawQuery.apiKey));
  const params = parseWith(route.params, match.rawParams, "path");
  const query = parseWith(route.query, rawQuery, "query");
  const body = route.body === undefined ? undefined : parseWith(route.body, await readJsonBody(req, deps.maxBodyBytes, deps.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH), "body");
  const input: RouteInput = { params, query, body };
  // The body may have taken up to the request timeout to arrive: the key may be revoked since.
  if (principal !== null) deps.auth.assertStillValid(principal);
  const access = route.access(input);
  if (access !== null && principal !== null) {
    if ("listPrefix" in access) Authenticator.authorizeListing(principal);
    else Authenticator.authorize(principal, access.verb, access.path);
  }
  return { route, input, principal };
}

export function sendJson(res: ServerResponse, status: number, body: unknown, extraHeaders: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), ...extraHeaders });
  res.end(text);
}

/**
 * A body that may be large: one piece is sent whole with its length; more are sent chunked,
 * with backpressure, the event loop turning between pieces. A failure after the first piece
 * was sent destroys the response (sendError), so no client takes a cut body for a whole one.
 */
export async function sendJsonInPieces(res: ServerResponse, status: number, body: unknown): Promise<void> {
  const pieces = jsonPieces(body);
  const first = pieces.next();
  const second = pieces.next();
  if (first.done === true || second.done === true) {
    const text = first.done === true ? "" : first.value;
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
    res.end(text);
    return;
  }
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  await writeJsonPieces(res, [first.value, second.value]);
  await writeJsonPieces(res, pieces);
  if (!res.destroyed) res.end();
}

export function sendError(deps: Pick<PipelineDeps, "log">, req: IncomingMessage, res: ServerResponse, error: unknown): void {
  const classified = classifyError(error);
  const url = sanitizeUrl(req.url);
  if (classified.serverFault) deps.log.error({ err: error, url }, "request failed");
  else deps.log.debug({ code: classified.body.error.code, url }, "request rejected");
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers: Record<string, string> = {};
  const retryAfterMs = classified.body.error.details.retryAfterMs;
  if (typeof retryAfterMs === "number") headers["retry-after"] = String(Math.ceil(retryAfterMs / 1000));
  if (classified.http === 413) {
    // The rest of an oversized body is never read: close the connection after answering.
    headers.connection = "close";
    req.resume();
  }
  sendJson(res, classified.http, classified.body, headers);
}

export async function handleHttp(deps: PipelineDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const started = performance.now();
  let routeName = "unmatched";
  const observe = () => deps.metrics.observeRequest(routeName, res.statusCode, (performance.now() - started) / 1000);
  // A response closed before it was written means the client went away: stop the work for it.
  const clientGone = new AbortController();
  const onClose = () => {
    if (!res.writableEnded) clientGone.abort(new Error("client disconnected"));
  };
  res.on("close", onClose);
  try {
    const { route, input, principal } = await prepare(deps, req, "http", (r) => (routeName = r.name));
    if (route.kind === "sse") {
      const release = acquireLiveSlot(deps, principal, req.socket.remoteAddress, () => res.destroy());
      deps.metrics.liveOpened("sse");
      try {
        await route.handle({ ...input, principal, req, res });
      } finally {
        release();
        deps.metrics.liveClosed("sse");
      }
      return;
    }
    const result = await route.handle({ ...input, principal, req, signal: clientGone.signal });
    const status = route.statusOf?.(result) ?? route.successStatus ?? 200;
    if (route.bodyInPieces === true) await sendJsonInPieces(res, status, result);
    else sendJson(res, status, result);
    observe();
  } catch (error) {
    if (clientGone.signal.aborted) {
      // Nobody is waiting for an answer: the read it was doing stopped, nothing to report.
      deps.log.debug({ route: routeName }, "client went away; request abandoned");
      return;
    }
    sendError(deps, req, res, error);
    observe();
  } finally {
    res.off("close", onClose);
  }
}
