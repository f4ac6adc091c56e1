// Errors classified once: every failure the system reports carries a stable `code`, a
// human message naming what was wrong, structured `details`, and whether retrying can help.
// Transports (HTTP, gRPC, broker acks) map these codes in one place each.

export type ErrorCode =
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
  | "unavailable"
  | "internal";

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
