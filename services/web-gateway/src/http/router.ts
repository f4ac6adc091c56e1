// A tiny router: routes are data (method, path template, zod schemas, scope, handler), so the
// same table serves requests, upgrades and the OpenAPI document. Templates use `{name}`
// for one path segment; a stream path is ONE segment, URL-encoded (`%2Fagents%2Fdemo`).

import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";
import type { Principal } from "../auth/authenticator.ts";
import type { Verb } from "../auth/keys.ts";
import type { Subscription } from "@agentrt/streams";

export type RouteKind = "json" | "sse" | "websocket";

/** What a route needs authorised: a verb on a path, or nothing (public). */
export type Access = { readonly verb: Verb; readonly path: string } | { readonly verb: "read"; readonly listPrefix: string | undefined } | null;

/** A route's parsed input: each part is the output of the route's own schema for it. */
export interface RouteInput<P = unknown, Q = unknown, B = unknown> {
  readonly params: P;
  readonly query: Q;
  readonly body: B;
}

export interface HandlerContext<P = unknown, Q = unknown, B = unknown> extends RouteInput<P, Q, B> {
  readonly principal: Principal | null;
  readonly req: IncomingMessage;
  /** Aborted when the client goes away before its answer is written: reads and folds stop. */
  readonly signal?: AbortSignal;
}

interface RouteShape<P, Q, B> {
  readonly name: string;
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly summary: string;
  readonly params?: z.ZodType<P>;
  readonly query?: z.ZodType<Q>;
  readonly body?: z.ZodType<B>;
  /** No credential needed (the OpenAPI document). */
  readonly public?: boolean;
  /** The scope check, computed from the parsed input. */
  access(input: RouteInput<P, Q, B>): Access;
}

export interface JsonRoute<P = unknown, Q = unknown, B = unknown, R = unknown> extends RouteShape<P, Q, B> {
  readonly kind: "json";
  /** The 2xx JSON body; validated in tests against real responses. */
  readonly response?: z.ZodType;
  readonly successStatus?: number;
  /**
   * The body grows with the agent (its state, what the model saw): written in pieces, letting the
   * event loop turn between them, instead of as one string (service-kit's json-pieces.ts).
   */
  readonly bodyInPieces?: boolean;
  /** Picks the 2xx status from the result when it varies (a replayed create is 200, not 201). */
  statusOf?(result: R): number;
  handle(ctx: HandlerContext<P, Q, B>): Promise<R>;
}

/** The handler writes the event stream to `res` itself. */
export interface SseRoute<P = unknown, Q = unknown, B = unknown> extends RouteShape<P, Q, B> {
  readonly kind: "sse";
  handle(ctx: HandlerContext<P, Q, B> & { readonly res: ServerResponse }): Promise<void>;
}

/** The handler opens the subscription the upgraded socket is pumped from. */
export interface WebSocketRoute<P = unknown, Q = unknown, B = unknown> extends RouteShape<P, Q, B> {
  readonly kind: "websocket";
  handle(ctx: HandlerContext<P, Q, B>): Promise<Subscription>;
}

/** A route of the table, its input types erased (the pipeline parses with its schemas). */
export type Route = JsonRoute | SseRoute | WebSocketRoute;

/**
 * Defines a route typed by its schemas: `params`, `query` and `body` reach `access` and
 * `handle` as their schemas' outputs, so handlers need no casts. The erasure to `Route` is
 * sound because the pipeline parses every input with exactly these schemas before calling.
 */
export function defineRoute<P = unknown, Q = unknown, B = unknown, R = unknown>(route: JsonRoute<P, Q, B, R>): Route;
export function defineRoute<P = unknown, Q = unknown, B = unknown>(route: SseRoute<P, Q, B>): Route;
export function defineRoute<P = unknown, Q = unknown, B = unknown>(route: WebSocketRoute<P, Q, B>): Route;
export function defineRoute(route: Route): Route {
  return route;
}

export type Match<T extends Route = Route> = { route: T; rawParams: Record<string, string> } | { route: null; allowed: string[] } | null;

function segmentsOf(path: string): string[] {
  return path.split("/").filter((s) => s.length > 0);
}

/** Matches a raw (still percent-encoded) pathname; params are decoded after splitting. */
export function matchRoute<T extends Route>(routes: readonly T[], method: string, pathname: string): Match<T> {
  const actual = segmentsOf(pathname);
  const allowed: string[] = [];
  for (const route of routes) {
    const template = segmentsOf(route.path);
    if (template.length !== actual.length) continue;
    const rawParams: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < template.length && ok; i++) {
      const t = template[i]!;
      const a = actual[i]!;
      if (t.startsWith("{") && t.endsWith("}")) {
        try {
          rawParams[t.slice(1, -1)] = decodeURIComponent(a);
        } catch {
          ok = false;
        }
      } else ok = t === a;
    }
    if (!ok) continue;
    if (route.method === method) return { route, rawParams };
    allowed.push(route.method);
  }
  return allowed.length > 0 ? { route: null, allowed } : null;
}
