// Which event types each service's store client may append (contract.md "Ownership", the
// "emitted by" column, made exact). Each service wraps its store with this list, so a bug or a
// compromised dependency in one service cannot write another service's events: defence in
// depth behind the gateway's API table and the per-service NATS users.

import type { EventType } from "./events.ts";
import { API_APPENDABLE, API_FORBIDDEN_CONTEXT_FIELDS, gatewayRecordRefusal } from "./api-appends.ts";
import { EVENT_TYPES } from "./events.ts";
import { reservedKeyNamespaceOf } from "./idempotency-keys.ts";
import type { ServiceName } from "./ownership.ts";

export type EmittingService = Exclude<ServiceName, "core">;

const apiTypes = Object.keys(API_APPENDABLE) as EventType[];

export const SERVICE_EMITS: Readonly<Record<EmittingService, readonly EventType[]>> = {
  // What API callers may append, plus the birth batch of POST /v1/agents.
  "web-gateway": [...new Set<EventType>([...apiTypes, "agent/created", "agent/configured", "agents/context-added"])],
  // The reducer also runs the codemode interpreter and the project worker.
  "agent-reducer": [
    "agents/context-added",
    "agent/configured",
    "agent/llm-request-requested",
    "agent/llm-request-settled",
    "agent/summary-updated",
    "agent/paused",
    "agent/resumed",
    "agent/runtime-changed",
    "agents/web-message-sent",
    "capability-host/script-run-requested",
    "render/message-delta",
    "render/script-delta",
    "stream/error-occurred",
  ],
  "llm-driver": [
    "agents/context-added",
    "agent/llm-request-settled",
    "agent/llm-response-chunks",
    "agent/token-usage-reported",
    "stream/error-occurred",
  ],
  // Its own run lifecycle, itx calls (sendMessage, agents.create/message) and what scripts may
  // append to their own agent with itx.agent.append.
  "capability-host": [
    "capability-host/script-run-started",
    "capability-host/script-run-settled",
    "capability-host/preamble-set",
    "capability-host/preamble-removed",
    "agents/web-message-sent",
    "agents/context-added",
    "agents/context-rewritten",
    "agent/created",
    "agent/configured",
    "agent/summary-updated",
    "agent/paused",
    "agent/resumed",
    "stream/error-occurred",
  ],
};

const EMITS: ReadonlyMap<string, ReadonlySet<string>> = new Map(Object.entries(SERVICE_EMITS).map(([service, types]) => [service, new Set<string>(types)]));

/** Whether `service` may append events of `type` (false for types it does not emit). Asked of every event of every signed record read. */
export function serviceMayEmit(service: EmittingService, type: string): boolean {
  return EMITS.get(service)?.has(type) === true;
}

/**
 * The services that write model output: `agents/context-added` as `assistant`, or with a request
 * offset or a compaction. The driver settles the model's reply; the reducer renders an
 * interrupted partial reply.
 */
export const MODEL_OUTPUT_WRITERS: readonly EmittingService[] = ["llm-driver", "agent-reducer"];

const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

/**
 * Why a record signed by `service` may not carry this stored event, or undefined when it may:
 * a known type the service does not emit, model output from a service that does not write it,
 * or, signed by web-gateway, anything no API caller may append (`gatewayRecordRefusal`). A type
 * this version does not know (a newer writer's) is not refused: readers pass over it anyway.
 * Readers apply it to every signed record (streams' signing.ts).
 */
export function signedEventRefusal(service: EmittingService, event: unknown, where = "events[0]"): string | undefined {
  if (typeof event !== "object" || event === null || Array.isArray(event)) return `${where} is not an object`;
  const { type, payload } = event as { type?: unknown; payload?: unknown };
  if (typeof type !== "string" || !KNOWN_TYPES.has(type)) return undefined;
  if (!serviceMayEmit(service, type)) return `${service} does not emit "${type}"`;
  if (service === "web-gateway") return gatewayRecordRefusal(event, where);
  const foreignKey = foreignKeyRefusal(service, event, where);
  if (foreignKey !== undefined) return foreignKey;
  if (type !== "agents/context-added" || typeof payload !== "object" || payload === null) return undefined;
  const fields = payload as Record<string, unknown>;
  // The driver writes the model's reply and compactions of it: a system or user item in its
  // name would be a compromised driver steering the agent.
  if (service === "llm-driver" && fields.role !== "assistant" && fields.compaction === undefined) {
    return `${where}.payload.role ${JSON.stringify(fields.role)}: llm-driver writes the model's reply ("assistant") and compactions, nothing else`;
  }
  if (MODEL_OUTPUT_WRITERS.includes(service)) return undefined;
  if (fields.role === "assistant") return `${where}.payload.role "assistant" is model output, which ${service} does not write`;
  const field = API_FORBIDDEN_CONTEXT_FIELDS.find((f) => fields[f] !== undefined);
  return field === undefined ? undefined : `${where}.payload.${field} is model output, which ${service} does not write`;
}

/**
 * Why `service` may not write `event`'s idempotency key, or undefined: a key in a namespace
 * reserved for other services (`RESERVED_KEY_NAMESPACES`). A key is a claim, so a compromised
 * driver writing its own types under `agent/request/R` had made the reducer's request for that
 * trigger commit nothing, for ever. Held at each service's store client (`ownedStore`) and by every
 * reader of signed records.
 */
export function foreignKeyRefusal(service: EmittingService, event: unknown, where = "events[0]"): string | undefined {
  if (typeof event !== "object" || event === null) return undefined;
  const key = (event as { idempotencyKey?: unknown }).idempotencyKey;
  if (typeof key !== "string") return undefined;
  const reserved = reservedKeyNamespaceOf(key);
  if (reserved === undefined || reserved.namespace.builtBy.includes(service)) return undefined;
  return `${where}.idempotencyKey "${key}" is in the namespace "${reserved.namespace.prefix}" reserved for ${reserved.namespace.builtBy.join(" and ")}; ${service} does not build it`;
}
