// Every failure the gateway reports leaves through this file: a contract error code (or one
// of the gateway's own input codes) becomes an HTTP status and a gRPC status HERE and nowhere
// else, so the two transports can never disagree about what a failure means.

import { status as GrpcStatus } from "@grpc/grpc-js";
import { isAgentRuntimeError, type ErrorCode, type ValidationIssue } from "@agentrt/contract";

/** Failures that only exist at the HTTP/gRPC edge, before any event is parsed. */
export type GatewayOnlyCode = "invalid_request" | "payload_too_large" | "method_not_allowed";
export type GatewayErrorCode = ErrorCode | GatewayOnlyCode;

/** A failure detected by the gateway itself (bad JSON, bad query, oversized body, auth). */
export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  readonly details: Record<string, unknown>;
  constructor(code: GatewayErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = "GatewayError";
    this.code = code;
    this.details = details;
  }
}

/** The one table: code → HTTP status and gRPC status. */
export const ERROR_STATUS: Readonly<Record<GatewayErrorCode, { http: number; grpc: GrpcStatus }>> = {
  invalid_request: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  invalid_payload: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  unknown_event_type: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  invalid_stream_path: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  invalid_event: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  ephemeral_misuse: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  unauthenticated: { http: 401, grpc: GrpcStatus.UNAUTHENTICATED },
  forbidden: { http: 403, grpc: GrpcStatus.PERMISSION_DENIED },
  not_found: { http: 404, grpc: GrpcStatus.NOT_FOUND },
  method_not_allowed: { http: 405, grpc: GrpcStatus.UNIMPLEMENTED },
  conflict: { http: 409, grpc: GrpcStatus.ABORTED },
  batch_too_large: { http: 413, grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  event_too_large: { http: 413, grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  payload_too_large: { http: 413, grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  offset_out_of_range: { http: 416, grpc: GrpcStatus.OUT_OF_RANGE },
  rate_limited: { http: 429, grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  internal: { http: 500, grpc: GrpcStatus.INTERNAL },
  unavailable: { http: 503, grpc: GrpcStatus.UNAVAILABLE },
};

export interface ErrorBody {
  readonly error: { readonly code: GatewayErrorCode; readonly message: string; readonly details: Record<string, unknown> };
}

export interface ClassifiedError {
  readonly http: number;
  readonly grpc: GrpcStatus;
  readonly body: ErrorBody;
  /** True when the failure is the server's, not the caller's (worth an error log). */
  readonly serverFault: boolean;
}

/** Classifies anything thrown by a handler into status codes and the public error body. */
export function classifyError(error: unknown): ClassifiedError {
  let code: GatewayErrorCode = "internal";
  let message = "Internal error.";
  let details: Record<string, unknown> = {};
  if (error instanceof GatewayError || isAgentRuntimeError(error)) {
    code = error.code;
    message = error.message;
    details = error.details;
  }
  const status = ERROR_STATUS[code];
  return { http: status.http, grpc: status.grpc, body: { error: { code, message, details } }, serverFault: status.http >= 500 };
}

/** A 400 naming each offending field and its rule, from zod-style issues. */
export function invalidRequest(what: string, issues: readonly ValidationIssue[]): GatewayError {
  const summary = issues.map((i) => `${i.path}: ${i.message}`).join("; ");
  return new GatewayError("invalid_request", `Invalid ${what}: ${summary}.`, { issues });
}
