// The public HTTP API as a table. Stream paths are ONE URL-encoded path segment
// (`/v1/streams/%2Fagents%2Fweb%2Fdemo/events`), which keeps every route unambiguous and
// every path a plain OpenAPI parameter.

import { Authenticator, type Principal } from "../auth/authenticator.ts";
import { assertGrantWithinKey, authorizeBatch } from "../auth/grants.ts";
import { appendRouteVerb, authorizeAppends } from "../auth/ownership.ts";
import { defineRoute, type HandlerContext, type Route } from "../http/router.ts";
import { pipeSse, resumeOffset } from "../http/live.ts";
import type { GatewayApi, ReadContext } from "./gateway-api.ts";
import * as s from "./schemas.ts";

/** The read's caller (its key, for the read gate's fair share) and its client's abort signal. */
function readContext(principal: Principal | null, signal: AbortSignal | undefined): ReadContext {
  return { ...(principal === null ? {} : { caller: principal.keyId }), ...(signal === undefined ? {} : { signal }) };
}

export function buildRoutes(api: GatewayApi, openApi: () => unknown): Route[] {
  const subscribeFor = ({ params, query, req }: HandlerContext<s.StreamParams, s.SubscribeQuery>) =>
    api.subscribe(params.streamPath, resumeOffset(req, query.fromOffset), query.ephemeral);
  return [
    defineRoute({
      name: "createAgent",
      method: "POST",
      path: "/v1/agents",
      summary:
        "Create an agent: commits its birth batch atomically (201). Retrying the same create returns the original events with status duplicate (200); 409 when the stream already holds other events, or an agent born from another prompt file, project or grant.",
      kind: "json",
      body: s.createAgentBodySchema,
      response: s.createAgentResponseSchema,
      successStatus: 201,
      access: ({ body }) => ({ verb: "append", path: body.streamPath }),
      handle: async ({ body, principal }) => {
        if (principal !== null) assertGrantWithinKey(principal, body.grant);
        const result = await api.createAgent(body, Authenticator.reads(principal));
        return { streamPath: body.streamPath, status: result.status, events: result.events };
      },
      // After `handle`, so its result type is inferred from it.
      statusOf: (result) => (result.status === "committed" ? 201 : 200),
    }),
    defineRoute({
      name: "listAgents",
      method: "GET",
      path: "/v1/agents",
      summary:
        "List agent streams (optionally under a prefix) with their summaries; only streams the key may read. A page ends at `limit` agents or early once its folds read MAX_LIST_FOLD_BYTES; `next` continues.",
      kind: "json",
      query: s.listQuerySchema,
      response: s.listResponseSchema,
      access: ({ query }) => ({ verb: "read", listPrefix: query.prefix }),
      handle: async ({ query: q, principal, signal }) => {
        return api.list(q.prefix, Authenticator.reads(principal), { limit: q.limit, ...(q.after === undefined ? {} : { after: q.after }), ...readContext(principal, signal) });
      },
    }),
    defineRoute({
      name: "appendEvents",
      method: "POST",
      path: "/v1/streams/{streamPath}/events",
      summary: "Append a batch of events atomically; any invalid event rejects the whole batch.",
      kind: "json",
      params: s.streamParamsSchema,
      body: s.appendBodySchema,
      response: s.appendResponseSchema,
      access: ({ params, body }) => ({ verb: appendRouteVerb(body.events), path: params.streamPath }),
      handle: async ({ params, body, principal, signal }) => {
        const { events, expectedLastOffset } = body;
        // Only what outside callers may append (auth/ownership.ts); then grants no wider than the
        // key and script requests stamped with the key's scope (auth/grants.ts).
        authorizeAppends(principal, params.streamPath, events);
        const authorized = principal === null ? events : await authorizeBatch(principal, params.streamPath, events, () => api.grantOf(params.streamPath, readContext(principal, signal)));
        const result = await api.append(params.streamPath, authorized, expectedLastOffset, Authenticator.reads(principal));
        return { status: result.status, events: result.events };
      },
    }),
    defineRoute({
      name: "readEvents",
      method: "GET",
      path: "/v1/streams/{streamPath}/events",
      summary:
        "Read durable events from an offset, one page at a time: at most `limit` events and MAX_READ_PAGE_BYTES of them (at least one); nextOffset continues.",
      kind: "json",
      params: s.streamParamsSchema,
      query: s.readQuerySchema,
      response: s.readResponseSchema,
      access: ({ params }) => ({ verb: "read", path: params.streamPath }),
      handle: ({ params, query, signal, principal }) => api.read(params.streamPath, query.fromOffset, query.limit, readContext(principal, signal)),
    }),
    defineRoute({
      name: "subscribeSse",
      method: "GET",
      path: "/v1/streams/{streamPath}/subscribe",
      summary: "Server-sent events: history from fromOffset, then live. Event id = offset; honours Last-Event-ID. ephemeral=1 adds live-lane events (no id).",
      kind: "sse",
      params: s.streamParamsSchema,
      query: s.subscribeQuerySchema,
      access: ({ params }) => ({ verb: "read", path: params.streamPath }),
      handle: async (ctx) => {
        const subscription = await subscribeFor(ctx);
        await pipeSse(ctx.req, ctx.res, subscription);
      },
    }),
    defineRoute({
      name: "subscribeWebSocket",
      method: "GET",
      path: "/v1/streams/{streamPath}/ws",
      summary: "WebSocket: the same events as the SSE route, one JSON event per text frame. Resume with fromOffset = last offset + 1.",
      kind: "websocket",
      params: s.streamParamsSchema,
      query: s.subscribeQuerySchema,
      access: ({ params }) => ({ verb: "read", path: params.streamPath }),
      handle: (ctx) => subscribeFor(ctx),
    }),
    defineRoute({
      name: "getAgentState",
      method: "GET",
      path: "/v1/agents/{streamPath}/state",
      summary: "The agent's folded state (the same pure fold the reducer uses).",
      kind: "json",
      bodyInPieces: true,
      params: s.streamParamsSchema,
      response: s.stateResponseSchema,
      access: ({ params }) => ({ verb: "read", path: params.streamPath }),
      handle: ({ params, signal, principal }) => api.state(params.streamPath, readContext(principal, signal)),
    }),
    defineRoute({
      name: "getRenderedRequest",
      method: "GET",
      path: "/v1/agents/{streamPath}/requests/{offset}",
      summary: "Exactly what the model saw for the llm-request-requested at this offset (fold through it, render).",
      kind: "json",
      bodyInPieces: true,
      params: s.requestParamsSchema,
      response: s.renderedRequestSchema,
      access: ({ params }) => ({ verb: "read", path: params.streamPath }),
      handle: ({ params, signal, principal }) => api.renderedRequest(params.streamPath, params.offset, readContext(principal, signal)),
    }),
    defineRoute({
      name: "getAgentUsage",
      method: "GET",
      path: "/v1/agents/{streamPath}/usage",
      summary:
        "What the stream holds (events, bytes of their JSON) against its quota, and its tenant (the streams under its path prefix) against the tenant's (null unless the key may read the prefix); appends past either get 403 quota_exceeded.",
      kind: "json",
      params: s.streamParamsSchema,
      response: s.usageResponseSchema,
      access: ({ params }) => ({ verb: "read", path: params.streamPath }),
      handle: ({ params, signal, principal }) =>
        api.usage(params.streamPath, readContext(principal, signal), Authenticator.reads(principal)),
    }),
    defineRoute({
      name: "auditAgent",
      method: "GET",
      path: "/v1/agents/{streamPath}/audit",
      summary:
        "The stream's invariants checked from its events alone (dense offsets, unique keys, one settlement per request, scripts settled once, the cache prefix, every message served): violations with the offsets involved, and notes on what is legitimately open.",
      kind: "json",
      params: s.streamParamsSchema,
      response: s.auditResponseSchema,
      access: ({ params }) => ({ verb: "read", path: params.streamPath }),
      handle: ({ params, signal, principal }) => api.audit(params.streamPath, readContext(principal, signal)),
    }),
    defineRoute({
      name: "getOpenApi",
      method: "GET",
      path: "/v1/openapi.json",
      summary: "This API as an OpenAPI 3.1 document.",
      kind: "json",
      public: true,
      access: () => null,
      handle: async () => openApi(),
    }),
  ];
}
