// What outside callers (API keys at the gateway) may append, and with which verb of their
// key's scope. Everything else is machinery: written only by the service that owns it, so a
// key that may append to an agent can still not forge a model reply, a script's result, a
// live-lane chunk or a settlement. The gateway enforces this table; nothing else decides it.
//
// Verbs: `append` is user input (what a chat user or an integration says); `operate` is
// steering the agent (pause/resume, rewriting its context, configuring it, its preamble, its
// bindings, running a script in its name). `admin` implies both; neither implies the other.

import { ContractViolationError } from "./errors.ts";
import { EVENT_OWNERSHIP, type ServiceName } from "./ownership.ts";
import type { EventType } from "./events.ts";
import { reservedKeyNamespaceOf } from "./idempotency-keys.ts";

export type ApiVerb = "append" | "operate";

export interface ApiAppendRule {
  readonly verb: ApiVerb;
  /** What an outside caller means by it (the gateway README's table is written from this). */
  readonly as: string;
}

/** The types an API caller may append, each with the verb it needs. Absent = refused. */
export const API_APPENDABLE: Readonly<Partial<Record<EventType, ApiAppendRule>>> = {
  "agent/created": { verb: "append", as: "a birth certificate: what POST /v1/agents writes, under the same verb" },
  "agents/context-added": { verb: "append", as: "user input (roles user and developer); role system is a prompt section and needs operate" },
  "agents/context-rewritten": { verb: "operate", as: "rewriting or deleting sections of the agent's context" },
  "agent/configured": { verb: "operate", as: "configuring the agent (model, debounce, limits)" },
  "agent/paused": { verb: "operate", as: "pausing the agent" },
  "agent/resumed": { verb: "operate", as: "resuming the agent" },
  "capability-host/preamble-set": { verb: "operate", as: "setting a preamble entry injected above the agent's scripts" },
  "capability-host/preamble-removed": { verb: "operate", as: "removing a preamble entry" },
  "capability-host/script-run-requested": { verb: "operate", as: "running a script in the agent's name (with the agent's grant)" },
  "agent/binding-set": { verb: "operate", as: "binding the agent to an integration channel" },
};

/** `agents/context-added` roles and the verb each needs from outside; assistant is never accepted. */
export const API_CONTEXT_ROLE_VERBS: Readonly<Record<string, ApiVerb | null>> = {
  user: "append",
  developer: "append",
  system: "operate",
  assistant: null,
};

/** Fields of `agents/context-added` only services set: model output and compaction. */
export const API_FORBIDDEN_CONTEXT_FIELDS: readonly string[] = ["llmRequestOffset", "compaction"];

/** Actors only services speak as: the capability host for scripts and sub-agent messages. */
export const API_FORBIDDEN_ACTORS: readonly string[] = ["script", "agent"];

/** Execution ids the codemode interpreter mints; the reducer counts them as the agent's own runs. */
export const RESERVED_EXECUTION_ID_PREFIXES: readonly string[] = ["agent-output:", "slash-command:"];

export type ApiAppendDecision =
  | { readonly allowed: true; readonly verb: ApiVerb }
  | { readonly allowed: false; readonly error: ContractViolationError };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function refuse(message: string, path: string, details: Record<string, unknown>): ApiAppendDecision {
  return { allowed: false, error: new ContractViolationError("forbidden", message, [{ path, message }], details) };
}

/**
 * Whether an outside caller may append this event input, and with which verb. Unknown types
 * and malformed inputs are left to the payload validator (they are 400s, not 403s), so this
 * answers `allowed` for them with the verb `append`.
 */
export function decideApiAppend(input: unknown, where = "events[0]"): ApiAppendDecision {
  if (!isRecord(input) || typeof input.type !== "string") return { allowed: true, verb: "append" };
  const type = input.type;
  const key = input.idempotencyKey;
  if (typeof key === "string") {
    const reserved = reservedKeyNamespaceOf(key);
    if (reserved !== undefined) {
      return refuse(
        `${where}.idempotencyKey "${key}" is in the namespace "${reserved.namespace.prefix}" reserved for ${reserved.namespace.builtBy.join(" and ")}; API callers may not use it.`,
        `${where}.idempotencyKey`,
        { namespace: reserved.namespace.prefix, reservedFor: reserved.namespace.builtBy },
      );
    }
  }
  if (!Object.hasOwn(EVENT_OWNERSHIP, type)) return { allowed: true, verb: "append" };
  const rule = API_APPENDABLE[type as EventType];
  if (rule === undefined) {
    const owner: ServiceName = EVENT_OWNERSHIP[type as EventType].owner;
    return refuse(`${where}: "${type}" is owned by ${owner} and may not be appended through the API.`, `${where}.type`, { type, owner });
  }
  const payload = isRecord(input.payload) ? input.payload : {};
  if (type === "agents/context-added") return decideContextAdded(payload, where);
  if (type === "capability-host/script-run-requested" && typeof payload.executionId === "string") {
    const prefix = RESERVED_EXECUTION_ID_PREFIXES.find((p) => (payload.executionId as string).startsWith(p));
    if (prefix !== undefined) {
      return refuse(`${where}.payload.executionId may not start with "${prefix}": those runs are minted by the codemode interpreter.`, `${where}.payload.executionId`, {
        type,
        namespace: prefix,
      });
    }
  }
  return { allowed: true, verb: rule.verb };
}

function decideContextAdded(payload: Record<string, unknown>, where: string): ApiAppendDecision {
  const type = "agents/context-added";
  const role = payload.role;
  if (typeof role !== "string" || !Object.hasOwn(API_CONTEXT_ROLE_VERBS, role)) return { allowed: true, verb: "append" };
  const verb = API_CONTEXT_ROLE_VERBS[role];
  if (verb === null || verb === undefined) {
    return refuse(`${where}.payload.role "${role}" is model output, written by llm-driver; API callers may send user, developer or (with operate) system.`, `${where}.payload.role`, {
      type,
      owner: "llm-driver",
    });
  }
  const field = API_FORBIDDEN_CONTEXT_FIELDS.find((f) => payload[f] !== undefined);
  if (field !== undefined) {
    return refuse(`${where}.payload.${field} is set only by llm-driver; API callers may not send it.`, `${where}.payload.${field}`, { type, owner: "llm-driver" });
  }
  const actor = isRecord(payload.actor) ? payload.actor.type : undefined;
  if (typeof actor === "string" && API_FORBIDDEN_ACTORS.includes(actor)) {
    return refuse(`${where}.payload.actor of type "${actor}" is spoken only by capability-host; API callers may not send it.`, `${where}.payload.actor`, {
      type,
      owner: "capability-host",
    });
  }
  return { allowed: true, verb };
}
