// The driver's named errors. Each carries a stable code (contract error codes) and says
// whether another attempt could help; the failure message on the stream is built from these.

import { AgentRuntimeError } from "@agentrt/contract";
import { MAX_BATCH_BYTES } from "@agentrt/streams";

/** The model call failed (HTTP error, broken stream, bad answer). */
export class ModelCallError extends AgentRuntimeError {
  constructor(message: string, options: { cause?: unknown; status?: number } = {}) {
    super("model_call_failed", message, { cause: options.cause, retryable: true, details: { status: options.status } });
  }
}

/** No progress from the model for the idle-watchdog window. */
export class ModelIdleError extends AgentRuntimeError {
  constructor(idleMs: number) {
    super("model_idle", `no progress from the model for ${formatSeconds(idleMs)} s (idle watchdog)`, {
      retryable: true,
      details: { idleMs },
    });
  }
}

/**
 * The model's reply passed what one settlement stores (MAX_REPLY_BYTES): the call is cut off and
 * nothing of it kept. Kept whole, the settlement could not be written at all (the store refuses
 * the batch) and the request stayed open until it expired, the model asked again on each redrive.
 */
export class ModelReplyTooLargeError extends AgentRuntimeError {
  constructor(limitBytes: number) {
    super(
      "payload_too_large",
      `the model's reply passed ${limitBytes} bytes, more than one settlement stores (it carries the reply twice, in a batch of at most ${MAX_BATCH_BYTES} bytes); it was cut off and not kept`,
      { retryable: true, details: { limitBytes } },
    );
  }
}

/** The request's `expiresAt` passed while the model was still answering. */
export class RequestDeadlineError extends AgentRuntimeError {
  constructor(expiresAt: string) {
    super("deadline_exceeded", `the request's deadline ${expiresAt} passed before the model finished`, {
      retryable: false,
      details: { expiresAt },
    });
  }
}

/** A model name that no configured provider serves. */
export class ProviderNotConfiguredError extends AgentRuntimeError {
  constructor(model: string, providers: readonly string[]) {
    super(
      "provider_not_configured",
      `model "${model}" routes to provider "${model.split("/")[0]}", which is not configured (configured: ${providers.join(", ") || "none"})`,
      { retryable: false, details: { model, providers } },
    );
  }
}

/** The provider configuration (LLM_PROVIDERS) is malformed. */
export class ProviderConfigError extends AgentRuntimeError {
  constructor(message: string, cause?: unknown) {
    super("invalid_config", message, { cause, retryable: false });
  }
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? String(ms / 1000) : (ms / 1000).toFixed(1);
}
