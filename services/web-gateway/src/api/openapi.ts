// The OpenAPI 3.1 document, generated from the route table and its zod schemas, so every
// route is documented exactly as it parses. A test checks the document against the router
// and against real responses.

import { z } from "zod";
import type { Route } from "../http/router.ts";
import { errorBodySchema } from "./schemas.ts";

const toSchema = (schema: z.ZodType, io: "input" | "output") =>
  z.toJSONSchema(schema, { target: "draft-2020-12", unrepresentable: "any", io, reused: "inline" }) as Record<string, unknown>;

function parametersOf(route: Route): unknown[] {
  const out: unknown[] = [];
  for (const [where, schema] of [["path", route.params], ["query", route.query]] as const) {
    if (schema === undefined) continue;
    const json = toSchema(schema, "input") as { properties?: Record<string, unknown>; required?: string[] };
    for (const [name, prop] of Object.entries(json.properties ?? {})) {
      out.push({ name, in: where, required: where === "path" || (json.required ?? []).includes(name), schema: prop });
    }
  }
  return out;
}

const ERROR_STATUSES = ["400", "401", "403", "404", "409", "413", "416", "429", "503"];

function responsesOf(route: Route): Record<string, unknown> {
  const ok = String((route.kind === "json" ? route.successStatus : undefined) ?? 200);
  const error = { description: "Error", content: { "application/json": { schema: toSchema(errorBodySchema, "output") } } };
  const success =
    route.kind === "sse"
      ? { description: "An event stream", content: { "text/event-stream": { schema: { type: "string" } } } }
      : route.kind === "websocket"
        ? { description: "Switching protocols (WebSocket)" }
        : { description: "OK", content: { "application/json": { schema: route.response ? toSchema(route.response, "output") : {} } } };
  const responses: Record<string, unknown> = { [route.kind === "websocket" ? "101" : ok]: success };
  for (const status of ERROR_STATUSES) responses[status] = error;
  // A body not declared application/json (browser-guards.ts).
  if (route.body !== undefined) responses["415"] = error;
  return responses;
}

export function buildOpenApi(routes: readonly Route[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const operation: Record<string, unknown> = {
      operationId: route.name,
      summary: route.summary,
      parameters: parametersOf(route),
      responses: responsesOf(route),
      ...(route.public === true ? { security: [] } : {}),
    };
    if (route.body !== undefined) {
      operation.requestBody = { required: true, content: { "application/json": { schema: toSchema(route.body, "input") } } };
    }
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "agentrt web-gateway",
      version: "1.0.0",
      description:
        "The public API of the agent runtime. Stream paths are one URL-encoded path segment: /agents/web/demo → %2Fagents%2Fweb%2Fdemo.",
    },
    components: { securitySchemes: { apiKey: { type: "http", scheme: "bearer" } } },
    security: [{ apiKey: [] }],
    paths,
  };
}
