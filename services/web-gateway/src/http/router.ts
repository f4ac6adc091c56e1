// A tiny router: routes are data (method, path template, zod schemas, scope, handler), so the
// same table serves requests, upgrades and the OpenAPI document. Templates use `{name}`
// for one path segment; a stream path is ONE segment, URL-encoded (`%2Fagents%2Fdemo`).

import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";
import type { Principal } from "../auth/authenticator.ts";
import type { Verb } from "../auth/keys.ts";

export type RouteKind = "json" | "sse" | "websocket";

/** What a route needs authorised: a verb on a path, or nothing (public). */
export type Access = { readonly verb: Verb; readonly path: string } | { readonly verb: "read"; readonly listPrefix: string | undefined } | null;

export interface RouteInput {
  readonly params: Record<string, unknown>;
  readonly query: Record<string, unknown>;
  readonly body: unknown;
}

export interface HandlerContext extends RouteInput {
  readonly principal: Principal | null;
  readonly req: IncomingMessage;
  /** Aborted when the client goes away before its answer is written: reads and folds stop. */
  readonly signal?: AbortSignal;
  /** Set for `sse` routes (the handler writes the stream). */
  readonly res?: ServerResponse;
}

export interface Route {
  readonly name: string;
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly summary: string;
  readonly kind: RouteKind;
  readonly params?: z.ZodType;
  readonly query?: z.ZodType;
  readonly body?: z.ZodType;
  /** The 2xx JSON body (json routes); validated in tests against real responses. */
  readonly response?: z.ZodType;
  readonly successStatus?: number;
  /** Picks the 2xx status from the result when it varies (a replayed create is 200, not 201). */
  statusOf?(result: unknown): number;
  /** No credential needed (the OpenAPI document). */
  readonly public?: boolean;
  /** The scope check, computed from the parsed input. */
  access(input: RouteInput): Access;
  handle(ctx: HandlerContext): Promise<unknown>;
}

export type Match = { route: Route; rawParams: Record<string, string> } | { route: null; allowed: string[] } | null;

function segmentsOf(path: string): string[] {
  return path.split("/").filter((s) => s.length > 0);
}

/** Matches a raw (still percent-encoded) pathname; params are decoded after splitting. */
export function matchRoute(routes: readonly Route[], method: string, pathname: string): Match {
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
