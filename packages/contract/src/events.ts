// The event registry: every type the contract names, its payload schema, and whether it is
// ephemeral. Typed events are a union discriminated on `type`, so a switch over them that
// forgets a type fails to compile (see `assertNever`).

import { z } from "zod";
import * as p from "./payloads.ts";

export const EVENT_URI_PREFIX = "events.iterate.com/";

export const eventPayloadSchemas = {
  "agent/created": p.agentCreatedSchema,
  "agent/configured": p.agentConfiguredSchema,
  "agent/binding-set": p.agentBindingSetSchema,
  "agents/context-added": p.contextAddedSchema,
  "agents/context-rewritten": p.contextRewrittenSchema,
  "agents/web-message-sent": p.webMessageSentSchema,
  "agent/llm-request-requested": p.llmRequestRequestedSchema,
  "agent/llm-request-settled": p.llmRequestSettledSchema,
  "agent/llm-response-chunks": p.llmResponseChunksSchema,
  "agent/token-usage-reported": p.tokenUsageReportedSchema,
  "agent/summary-updated": p.summaryUpdatedSchema,
  "agent/paused": p.agentPausedSchema,
  "agent/resumed": p.agentResumedSchema,
  "agent/runtime-changed": p.runtimeChangedSchema,
  "capability-host/script-run-requested": p.scriptRunRequestedSchema,
  "capability-host/script-run-started": p.scriptRunStartedSchema,
  "capability-host/script-run-settled": p.scriptRunSettledSchema,
  "capability-host/preamble-set": p.preambleSetSchema,
  "capability-host/preamble-removed": p.preambleRemovedSchema,
  "stream/error-occurred": p.streamErrorOccurredSchema,
  "render/message-delta": p.messageDeltaSchema,
  "render/script-delta": p.scriptDeltaSchema,
} as const;

export type EventType = keyof typeof eventPayloadSchemas;
export type PayloadOf<T extends EventType> = z.infer<(typeof eventPayloadSchemas)[T]>;

export const EVENT_TYPES = Object.keys(eventPayloadSchemas) as EventType[];

/**
 * Types that only ever travel the live lane: delivered to live subscribers, never stored,
 * excluded from reads. `agent/llm-response-chunks` is the contract's; the `render/*` deltas
 * are the codemode interpreter's live previews.
 */
export const EPHEMERAL_EVENT_TYPES: ReadonlySet<EventType> = new Set<EventType>([
  "agent/llm-response-chunks",
  "render/message-delta",
  "render/script-delta",
]);

/**
 * Durable types that a writer may instead publish on the live lane. `agent/runtime-changed`
 * is there for live UIs and "need not be durable" (contract.md), so the reducer publishes it
 * ephemerally rather than doubling every stream's length.
 */
export const MAY_BE_EPHEMERAL_EVENT_TYPES: ReadonlySet<EventType> = new Set<EventType>(["agent/runtime-changed"]);

export function isEventType(type: unknown): type is EventType {
  return typeof type === "string" && Object.hasOwn(eventPayloadSchemas, type);
}

export function isEphemeralType(type: EventType): boolean {
  return EPHEMERAL_EVENT_TYPES.has(type);
}

export function eventTypeUri(type: EventType): string {
  return `${EVENT_URI_PREFIX}${type}`;
}

/** An event as it is committed: identity `(streamPath, offset)`, `createdAt` stamped by the store. */
export interface StoredEventEnvelope {
  readonly streamPath: string;
  readonly offset: number;
  readonly createdAt: string;
  readonly idempotencyKey?: string;
  readonly ephemeral?: boolean;
}

export type AgentEventOf<T extends EventType> = StoredEventEnvelope & { readonly type: T; readonly payload: PayloadOf<T> };

/** Any committed (or live-lane) event, discriminated on `type`. */
export type AgentEvent = { [T in EventType]: AgentEventOf<T> }[EventType];

/** What a writer hands to `append`: no offset, no createdAt (the store assigns both). */
export type EventInputOf<T extends EventType> = {
  readonly type: T;
  readonly payload: PayloadOf<T>;
  readonly idempotencyKey?: string;
  readonly ephemeral?: boolean;
};
export type EventInput = { [T in EventType]: EventInputOf<T> }[EventType];

/** The idempotency keys a batch of events (stored or to append) carries, in order. */
export function idempotencyKeysOf(events: readonly { readonly idempotencyKey?: string }[]): string[] {
  return events.flatMap((e) => (e.idempotencyKey === undefined ? [] : [e.idempotencyKey]));
}

/** Builds a typed event input; a convenience that keeps call sites type-checked. */
export function eventInput<T extends EventType>(
  type: T,
  payload: PayloadOf<T>,
  idempotencyKey?: string,
): EventInputOf<T> {
  return idempotencyKey === undefined ? { type, payload } : { type, payload, idempotencyKey };
}

export function assertNever(value: never, what = "value"): never {
  throw new Error(`Unhandled ${what}: ${JSON.stringify(value)}`);
}
