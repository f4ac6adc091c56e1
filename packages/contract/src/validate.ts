// Parse at the boundary: raw input (an HTTP body, bytes from NATS, a script's append) becomes
// a typed event or a ContractViolationError naming the type, the field and the rule.

import type { z } from "zod";
import { ContractViolationError, type ValidationIssue } from "./errors.ts";
import {
  type AgentEvent,
  type EventInput,
  type EventType,
  eventPayloadSchemas,
  isEphemeralType,
  isEventType,
  MAY_BE_EPHEMERAL_EVENT_TYPES,
} from "./events.ts";
import { streamPathProblem } from "./stream-path.ts";
import { formatValuePath, illFormedTextAt } from "./well-formed.ts";

export const MAX_IDEMPOTENCY_KEY_LENGTH = 512;

function issuesOf(error: z.ZodError, prefix: string): ValidationIssue[] {
  return error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter((s) => s.length > 0).join("."),
    message: issue.message,
  }));
}

function describe(issues: readonly ValidationIssue[]): string {
  return issues.map((i) => `${i.path}: ${i.message}`).join("; ");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Validates the payload of one event type; returns the parsed payload. */
export function parsePayload<T extends EventType>(type: T, payload: unknown): z.infer<(typeof eventPayloadSchemas)[T]> {
  const result = eventPayloadSchemas[type].safeParse(payload);
  if (!result.success) {
    const issues = issuesOf(result.error, "payload");
    throw new ContractViolationError(
      "invalid_payload",
      `Invalid payload for event type "${type}": ${describe(issues)}.`,
      issues,
      { type },
    );
  }
  return result.data as z.infer<(typeof eventPayloadSchemas)[T]>;
}

const INPUT_FIELDS = new Set(["type", "payload", "idempotencyKey", "ephemeral"]);

/** The fields an event input may not have, or undefined (allocates nothing on the common path). */
function unknownInputFields(raw: Record<string, unknown>): string[] | undefined {
  let unknown: string[] | undefined;
  for (const key in raw) {
    if (Object.hasOwn(raw, key) && !INPUT_FIELDS.has(key)) (unknown ??= []).push(key);
  }
  return unknown;
}

/**
 * Validates one event a writer wants to append. `index` names its place in a batch so the
 * error says which event was wrong.
 */
export function parseEventInput(raw: unknown, index?: number): EventInput {
  const where = index === undefined ? "event" : `events[${index}]`;
  if (!isRecord(raw)) {
    throw new ContractViolationError("invalid_event", `${where} must be an object with "type" and "payload".`, [
      { path: where, message: "must be an object" },
    ]);
  }
  const unknownKeys = unknownInputFields(raw);
  if (unknownKeys !== undefined) {
    throw new ContractViolationError(
      "invalid_event",
      `${where} has unknown field(s) ${unknownKeys.map((k) => `"${k}"`).join(", ")}; an event input has type, payload, idempotencyKey and ephemeral.`,
      unknownKeys.map((k) => ({ path: `${where}.${k}`, message: "unknown field" })),
    );
  }
  const { type, payload, idempotencyKey, ephemeral } = raw;
  if (!isEventType(type)) {
    throw new ContractViolationError(
      "unknown_event_type",
      `${where}: unknown event type ${JSON.stringify(type)}.`,
      [{ path: `${where}.type`, message: "unknown event type" }],
      { type },
    );
  }
  if (idempotencyKey !== undefined) {
    if (typeof idempotencyKey !== "string" || idempotencyKey.length === 0 || idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      throw new ContractViolationError(
        "invalid_event",
        `${where}.idempotencyKey must be a non-empty string of at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`,
        [{ path: `${where}.idempotencyKey`, message: "must be a non-empty string" }],
        { type },
      );
    }
  }
  if (ephemeral !== undefined && typeof ephemeral !== "boolean") {
    throw new ContractViolationError("invalid_event", `${where}.ephemeral must be a boolean.`, [
      { path: `${where}.ephemeral`, message: "must be a boolean" },
    ]);
  }
  if (isEphemeralType(type) && ephemeral === false) {
    throw new ContractViolationError(
      "ephemeral_misuse",
      `${where}: "${type}" is always ephemeral; "ephemeral: false" is not allowed.`,
      [{ path: `${where}.ephemeral`, message: "must not be false for an ephemeral type" }],
      { type },
    );
  }
  if (!isEphemeralType(type) && !MAY_BE_EPHEMERAL_EVENT_TYPES.has(type) && ephemeral === true) {
    throw new ContractViolationError(
      "ephemeral_misuse",
      `${where}: "${type}" is durable and cannot be appended as ephemeral.`,
      [{ path: `${where}.ephemeral`, message: "only live-lane types are ephemeral" }],
      { type },
    );
  }
  let parsed: unknown;
  try {
    parsed = parsePayload(type, payload);
  } catch (error) {
    if (error instanceof ContractViolationError) {
      const issues = error.issues.map((i) => ({ ...i, path: `${where}.${i.path}` }));
      throw new ContractViolationError("invalid_payload", `${where}: ${error.message}`, issues, { type, index });
    }
    throw error;
  }
  const illFormed = illFormedTextAt(parsed);
  if (illFormed !== undefined || (typeof idempotencyKey === "string" && !idempotencyKey.isWellFormed())) {
    const path = illFormed === undefined ? `${where}.idempotencyKey` : formatValuePath(`${where}.payload`, illFormed);
    throw new ContractViolationError(
      "invalid_payload",
      `${path} holds text that is not well-formed Unicode (a lone surrogate such as \\ud800); send whole characters.`,
      [{ path, message: "not well-formed Unicode (a lone surrogate)" }],
      { type, index },
    );
  }
  return {
    type,
    payload: parsed,
    ...(idempotencyKey === undefined ? {} : { idempotencyKey: idempotencyKey as string }),
    ...(isEphemeralType(type) || ephemeral === true ? { ephemeral: true } : {}),
  } as EventInput;
}

export type StoredEventParse = { ok: true; event: AgentEvent } | { ok: false; reason: string };

/**
 * Parses an event read back from a stream. Never throws: a reducer meeting an event written by
 * an older or newer version skips it.
 */
export function parseStoredEvent(raw: unknown): StoredEventParse {
  if (!isRecord(raw)) return { ok: false, reason: "not an object" };
  const { streamPath, offset, type, payload, createdAt, idempotencyKey, ephemeral } = raw;
  if (streamPathProblem(streamPath) !== null) return { ok: false, reason: "bad streamPath" };
  if (typeof offset !== "number" || !Number.isInteger(offset) || offset < 0) return { ok: false, reason: "bad offset" };
  if (typeof createdAt !== "string" || Number.isNaN(Date.parse(createdAt))) return { ok: false, reason: "bad createdAt" };
  if (!isEventType(type)) return { ok: false, reason: `unknown type ${JSON.stringify(type)}` };
  const result = eventPayloadSchemas[type].safeParse(payload);
  if (!result.success) return { ok: false, reason: `invalid ${type} payload: ${describe(issuesOf(result.error, "payload"))}` };
  const event = {
    streamPath,
    offset,
    createdAt,
    type,
    payload: result.data,
    ...(typeof idempotencyKey === "string" ? { idempotencyKey } : {}),
    ...(ephemeral === true ? { ephemeral: true } : {}),
  } as AgentEvent;
  return { ok: true, event };
}
