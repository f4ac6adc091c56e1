// The public API's request and response shapes as zod schemas: the same objects parse every
// request (parse at the boundary) and generate the OpenAPI document, so the two cannot drift.

import { z } from "zod";
import { agentGrantSchema, EVENT_TYPES, streamPathProblem } from "@agentrt/contract";

/** A stream path (`/agents/web/demo`); in URLs it is ONE path segment, URL-encoded. */
export const streamPathSchema = z
  .string()
  .superRefine((value, ctx) => {
    const problem = streamPathProblem(value);
    if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
  })
  .meta({ description: "A stream path such as /agents/web/demo. In URLs it is one URL-encoded segment (%2Fagents%2Fweb%2Fdemo).", example: "/agents/web/demo" });

/**
 * An integer in a query or a path, written in decimal digits only: `0x10`, ` 1`, `1e3` and `1.0`
 * are 400s, where a coercion read them as 16, 1, 1000 and 1 (a proxy or a log reading the same
 * text would disagree with what this server did).
 */
const decimalInt = (min: number, max: number = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .regex(/^[0-9]{1,16}$/, "must be written in decimal digits")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const offsetQuery = decimalInt(1);
/** An SSE client's `Last-Event-ID`: the offset it saw last, in decimal digits as the query's offsets. */
export const lastEventIdSchema = decimalInt(0);

export const streamParamsSchema = z.strictObject({ streamPath: streamPathSchema });
export const requestParamsSchema = z.strictObject({ streamPath: streamPathSchema, offset: offsetQuery });

export const createAgentBodySchema = z.strictObject({
  streamPath: streamPathSchema,
  promptFile: z.string().max(200_000).optional().meta({ description: 'A tagged prompt file: `<section key="K">…</section>` blocks, one keyed system item each.' }),
  project: z.string().min(1).max(200).optional(),
  grant: agentGrantSchema.optional().meta({ description: "Prefixes (with read/append) this agent's scripts may touch beyond its own subtree; never wider than the calling key's scope." }),
});

export const appendBodySchema = z.strictObject({
  events: z.array(z.unknown()).min(1).meta({ description: "Event inputs `{type, payload, idempotencyKey?, ephemeral?}`; all commit or none." }),
  expectedLastOffset: z.number().int().nonnegative().optional(),
});

export const readQuerySchema = z.strictObject({
  fromOffset: offsetQuery.default(1),
  limit: decimalInt(1, 1000).default(100),
});

const flag = z.enum(["1", "0", "true", "false"]).transform((v) => v === "1" || v === "true");

export const subscribeQuerySchema = z.strictObject({
  fromOffset: offsetQuery.optional(),
  ephemeral: flag.default(false),
  apiKey: z.string().optional().meta({ description: "For browsers' EventSource/WebSocket, which cannot set headers." }),
});

export const listQuerySchema = z.strictObject({
  prefix: z.string().startsWith("/").max(512).optional(),
  after: z.string().startsWith("/").max(512).optional().meta({ description: "Continue after this stream path (a previous page's `next`)." }),
  limit: decimalInt(1, 500).default(500),
});

export const emptySchema = z.strictObject({});

// --- responses -------------------------------------------------------------------------

export const eventSchema = z
  .object({
    streamPath: z.string(),
    offset: z.number().int().nonnegative(),
    type: z.enum(EVENT_TYPES as [string, ...string[]]),
    payload: z.unknown(),
    createdAt: z.string(),
    idempotencyKey: z.string().optional(),
    ephemeral: z.boolean().optional(),
  })
  .meta({ id: "Event" });

export const appendResponseSchema = z.object({
  status: z.enum(["committed", "duplicate"]),
  events: z.array(eventSchema),
});

export const readResponseSchema = z.object({
  streamPath: z.string(),
  events: z.array(eventSchema),
  nextOffset: z.number().int().min(1).meta({ description: "Pass as fromOffset to read the next page." }),
  lastOffset: z.number().int().nonnegative(),
});

export const agentSummarySchema = z
  .object({
    streamPath: z.string(),
    lastOffset: z.number().int().nonnegative(),
    title: z.string().nullable(),
    activity: z.string().nullable(),
    waitingFor: z.string().nullable(),
    openRequestOffset: z.number().int().nullable(),
    paused: z.boolean(),
  })
  .meta({ id: "AgentSummary" });

export const listResponseSchema = z.object({
  agents: z.array(agentSummarySchema),
  next: z.string().optional().meta({ description: "Present when the page ended early (limit or fold budget): pass as `after` for the next page." }),
});

export const stateResponseSchema = z.object({
  streamPath: z.string(),
  lastOffset: z.number().int().nonnegative(),
  state: z.record(z.string(), z.unknown()),
});

export const renderedMessageSchema = z.object({ role: z.string(), content: z.string() }).meta({ id: "RenderedMessage" });

export const renderedRequestSchema = z.object({
  streamPath: z.string(),
  requestOffset: z.number().int().min(1),
  model: z.string(),
  requestedAt: z.string(),
  messages: z.array(renderedMessageSchema),
});

const auditFindingSchema = z.object({ rule: z.string(), message: z.string(), offsets: z.array(z.number().int()) }).meta({ id: "AuditFinding" });

export const usageResponseSchema = z
  .object({
    streamPath: z.string(),
    events: z.number().int().nonnegative(),
    bytes: z.number().int().nonnegative(),
    quota: z.object({ events: z.number().int().positive(), bytes: z.number().int().positive() }),
    tenant: z
      .object({
        prefix: z.string(),
        streams: z.number().int().nonnegative(),
        bytes: z.number().int().nonnegative(),
        quota: z.object({ streams: z.number().int().positive(), bytes: z.number().int().positive() }),
      })
      .nullable(),
  })
  .meta({ id: "StreamUsage" });

export const auditResponseSchema = z
  .object({
    streamPath: z.string(),
    events: z.number().int().nonnegative(),
    firstOffset: z.number().int().nonnegative(),
    lastOffset: z.number().int().nonnegative(),
    requests: z.number().int().nonnegative(),
    settlements: z.number().int().nonnegative(),
    scripts: z.number().int().nonnegative(),
    prefixPairsChecked: z.number().int().nonnegative(),
    violations: z.array(auditFindingSchema),
    notes: z.array(auditFindingSchema),
  })
  .meta({ id: "AuditReport" });

export const createAgentResponseSchema = z.object({
  streamPath: z.string(),
  status: z.enum(["committed", "duplicate"]),
  events: z.array(eventSchema),
});

export const errorBodySchema = z
  .object({ error: z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }) })
  .meta({ id: "Error" });


// --- the parsed inputs' types, as the route handlers receive them ----------------------

export type StreamParams = z.output<typeof streamParamsSchema>;
export type SubscribeQuery = z.output<typeof subscribeQuerySchema>;
