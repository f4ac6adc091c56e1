// Pure pieces of the HTTP edge: route matching (one URL-encoded segment per stream path),
// the single error table, SSE framing and the resume offset.
import type { IncomingMessage } from "node:http";
import { status } from "@grpc/grpc-js";
import { AgentRuntimeError, ContractViolationError } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { classifyError, ERROR_STATUS, GatewayError } from "../src/errors.ts";
import { matchRoute, type Route } from "../src/http/router.ts";
import { resumeOffset, sseFrame } from "../src/http/live.ts";

const route = (name: string, method: "GET" | "POST", path: string): Route => ({
  name,
  method,
  path,
  summary: name,
  kind: "json",
  access: () => null,
  handle: async () => null,
});
const routes = [route("read", "GET", "/v1/streams/{streamPath}/events"), route("append", "POST", "/v1/streams/{streamPath}/events"), route("req", "GET", "/v1/agents/{streamPath}/requests/{offset}")];

describe("matchRoute", () => {
  it("decodes a URL-encoded stream path as one parameter", () => {
    const m = matchRoute(routes, "GET", "/v1/agents/%2Fagents%2Fweb%2Fdemo/requests/26");
    expect(m).toMatchObject({ route: { name: "req" }, rawParams: { streamPath: "/agents/web/demo", offset: "26" } });
  });
  it("does not match a raw (unencoded) path, and reports allowed methods", () => {
    expect(matchRoute(routes, "GET", "/v1/streams/agents/web/demo/events")).toBeNull();
    expect(matchRoute(routes, "DELETE", "/v1/streams/%2Fa/events")).toEqual({ route: null, allowed: ["GET", "POST"] });
  });
  it("refuses malformed percent-encoding instead of throwing", () => {
    expect(matchRoute(routes, "GET", "/v1/streams/%E0%A4%A/events")).toBeNull();
  });
});

describe("error table", () => {
  it("maps contract and gateway codes to HTTP and gRPC status in one place", () => {
    const invalid = classifyError(new ContractViolationError("invalid_payload", "bad", [{ path: "events[0].payload.role", message: "x" }]));
    expect([invalid.http, invalid.grpc]).toEqual([400, status.INVALID_ARGUMENT]);
    expect(invalid.body.error.details.issues).toEqual([{ path: "events[0].payload.role", message: "x" }]);
    expect(classifyError(new GatewayError("offset_out_of_range", "past")).http).toBe(416);
    expect(classifyError(new GatewayError("payload_too_large", "big")).http).toBe(413);
    expect(classifyError(new GatewayError("rate_limited", "slow")).grpc).toBe(status.RESOURCE_EXHAUSTED);
    expect(classifyError(new GatewayError("unauthenticated", "who")).http).toBe(401);
    expect(classifyError(new GatewayError("forbidden", "no")).http).toBe(403);
    // A stream at its quota only grows: waiting does not help, so not a 429.
    const quota = classifyError(new AgentRuntimeError("quota_exceeded", "full"));
    expect([quota.http, quota.grpc, quota.serverFault]).toEqual([403, status.RESOURCE_EXHAUSTED, false]);
  });
  it("a GatewayError is an AgentRuntimeError: one hierarchy, with a code, retryable and cause", () => {
    const cause = new Error("socket hang up");
    const error = new GatewayError("invalid_request", "Invalid body.", { field: "events" }, cause);
    expect(error).toBeInstanceOf(AgentRuntimeError);
    expect(error).toMatchObject({ name: "GatewayError", code: "invalid_request", retryable: false, details: { field: "events" }, cause });
    expect(new GatewayError("rate_limited", "slow").retryable).toBe(true);
    // Another service's failure reaching the edge is the server's fault, never the caller's.
    expect(classifyError(new AgentRuntimeError("invalid_config", "bad env")).serverFault).toBe(true);
    expect(classifyError(new AgentRuntimeError("model_call_failed", "502 from the model", { retryable: true })).http).toBe(502);
  });
  it("hides unexpected errors behind a 500 without leaking their message", () => {
    const internal = classifyError(new Error("database password is hunter2"));
    expect(internal.http).toBe(500);
    expect(internal.body.error.message).toBe("Internal error.");
    expect(internal.serverFault).toBe(true);
  });
  it("covers 400, 401, 403, 404, 409, 413, 416, 429 and 503", () => {
    const statuses = new Set(Object.values(ERROR_STATUS).map((s) => s.http));
    for (const s of [400, 401, 403, 404, 409, 413, 416, 429, 503]) expect(statuses.has(s)).toBe(true);
  });
});

describe("SSE framing and resume", () => {
  const base = { streamPath: "/a", createdAt: "2026-01-01T00:00:00.000Z" };
  it("gives durable events their offset as id and live-lane events none", () => {
    expect(sseFrame({ ...base, offset: 7, type: "agent/created", payload: {} })).toBe(`id: 7\ndata: ${JSON.stringify({ ...base, offset: 7, type: "agent/created", payload: {} })}\n\n`);
    const chunk = { ...base, offset: 7, type: "agent/llm-response-chunks" as const, payload: { chunks: [1], llmRequestOffset: 7, sequence: 0 }, ephemeral: true };
    expect(sseFrame(chunk).startsWith("data: ")).toBe(true);
  });
  it("resumes after Last-Event-ID, which wins over the query's fromOffset", () => {
    const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
    expect(resumeOffset(req({}), undefined)).toBe(1);
    expect(resumeOffset(req({}), 5)).toBe(5);
    expect(resumeOffset(req({ "last-event-id": "9" }), 5)).toBe(10);
    expect(() => resumeOffset(req({ "last-event-id": "x" }), 5)).toThrow(/Last-Event-ID/);
    expect(resumeOffset(req({ "last-event-id": "0" }), 5)).toBe(1);
  });
  it("reads Last-Event-ID in decimal digits only, as the query's offsets: not hex, not an exponent, not past 2^53", () => {
    const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
    for (const id of ["0x2", "1e1", "-1", "2.0", "+3", "99999999999999999"]) {
      expect(() => resumeOffset(req({ "last-event-id": id }), 5), id).toThrow(`Last-Event-ID must be a non-negative integer offset in decimal digits, got ${JSON.stringify(id)}.`);
    }
  });
});
