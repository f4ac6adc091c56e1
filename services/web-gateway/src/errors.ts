// Every failure the gateway reports leaves through this file: a contract error code (or one
// of the gateway's own input codes) becomes an HTTP status and a gRPC status HERE and nowhere
// else, so the two transports can never disagree about what a failure means.

import { status as GrpcStatus } from "@grpc/grpc-js";
import { AgentRuntimeError, isAgentRuntimeError, type ErrorCode, type ValidationIssue } from "@agentrt/contract";

/** The gateway reports the contract's codes (its edge codes, `invalid_request` … , are among them). */
export type GatewayErrorCode = ErrorCode;

/**
 * A failure detected by the gateway itself (bad JSON, bad query, oversized body, auth): part
 * of the one hierarchy, so anything that handles an `AgentRuntimeError` handles it too. Its
 * causes are the caller's, never worth retrying as sent.
 */
export class GatewayError extends AgentRuntimeError {
  constructor(code: GatewayErrorCode, message: string, details: Record<string, unknown> = {}, cause?: unknown) {
    super(code, message, { details, retryable: code === "unavailable" || code === "rate_limited", cause });
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
  unsupported_media_type: { http: 415, grpc: GrpcStatus.INVALID_ARGUMENT },
  offset_out_of_range: { http: 416, grpc: GrpcStatus.OUT_OF_RANGE },
  rate_limited: { http: 429, grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  // Waiting does not help (a stream only grows): 403, not 429.
  quota_exceeded: { http: 403, grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  internal: { http: 500, grpc: GrpcStatus.INTERNAL },
  unavailable: { http: 503, grpc: GrpcStatus.UNAVAILABLE },
  // Codes of other services' failures: should one reach the edge, it is the server's fault.
  invalid_config: { http: 500, grpc: GrpcStatus.INTERNAL },
  provider_not_configured: { http: 500, grpc: GrpcStatus.INTERNAL },
  invalid_interrupt: { http: 500, grpc: GrpcStatus.INTERNAL },
  protocol_violation: { http: 500, grpc: GrpcStatus.INTERNAL },
  model_call_failed: { http: 502, grpc: GrpcStatus.UNAVAILABLE },
  model_idle: { http: 504, grpc: GrpcStatus.DEADLINE_EXCEEDED },
  deadline_exceeded: { http: 504, grpc: GrpcStatus.DEADLINE_EXCEEDED },
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
  if (isAgentRuntimeError(error)) {
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
