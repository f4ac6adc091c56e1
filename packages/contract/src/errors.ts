// Errors classified once: every failure the system reports carries a stable `code`, a
// human message naming what was wrong, structured `details`, and whether retrying can help.
// Transports (HTTP, gRPC, broker acks) map these codes in one place each.

// Codes say what happened, not which transport status they map to; each transport maps them in
// one table (the gateway's ERROR_STATUS for HTTP/gRPC; `retryable` for the work queues).
export type ErrorCode =
  // Input that breaks the contract (the caller must change it).
  | "invalid_payload"
  | "unknown_event_type"
  | "invalid_stream_path"
  | "invalid_event"
  | "batch_too_large"
  | "event_too_large"
  | "ephemeral_misuse"
  | "offset_out_of_range"
  | "not_found"
  | "conflict"
  | "unauthenticated"
  | "forbidden"
  | "rate_limited"
  // A stream holds its quota of events or bytes: nothing more is appended to it from outside.
  | "quota_exceeded"
  | "unavailable"
  | "internal"
  // The gateway's edge: input rejected before any event is parsed.
  | "invalid_request"
  | "payload_too_large"
  | "unsupported_media_type"
  | "method_not_allowed"
  // A service's own configuration (environment, provider table) is malformed.
  | "invalid_config"
  // A model name that no configured provider serves.
  | "provider_not_configured"
  // The interrupt protocol's request or reply broke its schema.
  | "invalid_interrupt"
  // A model call failed (HTTP error, broken stream) or made no progress for too long.
  | "model_call_failed"
  | "model_idle"
  // A deadline the work carried (a request's expiresAt) passed before it finished.
  | "deadline_exceeded"
  // A component broke its own contract (a bug, not the input's fault).
  | "protocol_violation";

export interface ValidationIssue {
  /** Dotted path of the offending field inside the payload, e.g. `payload.result.status`. */
  readonly path: string;
  readonly message: string;
}

export class AgentRuntimeError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  readonly retryable: boolean;

  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: Record<string, unknown>; retryable?: boolean; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options.details ?? {};
    this.retryable = options.retryable ?? false;
  }
}

/** Bad input that can never succeed as sent: the caller must change it. */
export class ContractViolationError extends AgentRuntimeError {
  readonly issues: readonly ValidationIssue[];

  constructor(
    code: ErrorCode,
    message: string,
    issues: readonly ValidationIssue[] = [],
    details: Record<string, unknown> = {},
  ) {
    super(code, message, { details: { ...details, issues }, retryable: false });
    this.issues = issues;
  }
}

export function isAgentRuntimeError(error: unknown): error is AgentRuntimeError {
  return error instanceof AgentRuntimeError;
}

/**
 * Whether another attempt could help: an `AgentRuntimeError` says so itself; anything else
 * (a bug, a dropped socket the code did not classify) is assumed transient.
 */
export function isRetryable(error: unknown): boolean {
  return isAgentRuntimeError(error) ? error.retryable : true;
}
