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
  "agents/context-added": {
    verb: "append",
    as: "user input (role user, and role developer naming its actor); role system, a developer item with no actor (the agent's own voice), or any item with a section `key` (a section of the standing instructions, which supersedes the last one of its key), needs operate",
  },
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

/**
 * The longest execution id a script may be requested with. The host's keys for the run carry it
 * (`capability-host/script-run-settled@<id>`, at most 512 characters in all): a longer one could
 * never be started or settled, and its script would hang until it expired. Checked on new
 * requests only; a stored event is never refused on reading.
 */
export const MAX_EXECUTION_ID_LENGTH = 256;

/** Execution ids the codemode interpreter mints; the reducer counts them as the agent's own runs. */
export const RESERVED_EXECUTION_ID_PREFIXES: readonly string[] = ["agent-output:", "slash-command:"];

/** Who is appending, as refusals name them. */
interface Speaker {
  /** "API callers" */
  readonly who: string;
  /** "through the API" */
  readonly via: string;
  /** Whether a value's limits are checked too (new appends), or only who may write what (stored records). */
  readonly limits: boolean;
  /** The service whose own key namespaces the speaker may use (the gateway's births). */
  readonly builds?: ServiceName;
}

const API_CALLERS: Speaker = { who: "API callers", via: "through the API", limits: true };
const SCRIPTS: Speaker = { who: "scripts", via: "by a script", limits: true };
const GATEWAY_RECORDS: Speaker = { who: "the gateway's records", via: "in a record signed by web-gateway", limits: false, builds: "web-gateway" };

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
  return decideAppendAs(API_CALLERS, input, where);
}

/**
 * Why the gateway could not have written this stored event for any API caller, or undefined: a
 * type or key the contract keeps for another service, a role, field or actor only services write,
 * a run id the codemode interpreter mints. Readers hold records signed by web-gateway to it
 * (service-emits.ts `signedEventRefusal`), so the gateway's key alone cannot speak as the model
 * or a script. Only who may write what is checked, never a value's limits: a stored record must
 * not become unreadable because a limit changed.
 */
export function gatewayRecordRefusal(event: unknown, where = "events[0]"): string | undefined {
  const decision = decideAppendAs(GATEWAY_RECORDS, event, where);
  return decision.allowed ? undefined : decision.error.message;
}

function decideAppendAs(speaker: Speaker, input: unknown, where: string): ApiAppendDecision {
  if (!isRecord(input) || typeof input.type !== "string") return { allowed: true, verb: "append" };
  const type = input.type;
  const squatted = reservedKeyRefusal(speaker, input, where);
  if (squatted !== undefined) return squatted;
  if (!Object.hasOwn(EVENT_OWNERSHIP, type)) return { allowed: true, verb: "append" };
  const rule = API_APPENDABLE[type as EventType];
  if (rule === undefined) {
    const owner: ServiceName = EVENT_OWNERSHIP[type as EventType].owner;
    return refuse(`${where}: "${type}" is owned by ${owner} and may not be appended ${speaker.via}.`, `${where}.type`, { type, owner });
  }
  const payload = isRecord(input.payload) ? input.payload : {};
  if (type === "agents/context-added") return decideContextAdded(speaker, payload, where);
  if (type === "agent/configured" && speaker.limits) {
    const tooLong = configDelayRefusal(payload, where) ?? configBoundRefusal(payload, where);
    if (tooLong !== undefined) return tooLong;
  }
  if (type === "capability-host/script-run-requested" && typeof payload.executionId === "string") {
    if (speaker.limits && payload.executionId.length > MAX_EXECUTION_ID_LENGTH) {
      const message = `${where}.payload.executionId must be at most ${MAX_EXECUTION_ID_LENGTH} characters (the host's idempotency keys carry it), got ${payload.executionId.length}.`;
      return { allowed: false, error: new ContractViolationError("invalid_payload", message, [{ path: `${where}.payload.executionId`, message }], { type, maxLength: MAX_EXECUTION_ID_LENGTH }) };
    }
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

/**
 * The longest delay a configuration may name (debounce, expiry, retry backoff): what a timer
 * waits at most, 24.8 days. A debounce of 2^53 ms made every decision of the agent throw on its
 * date (past the year 275 760) and retry every 500 ms for good; an expiry of 10^14 ms wrote a
 * request whose `expiresAt` no schema accepts. Checked on new appends only.
 */
export const MAX_CONFIG_DELAY_MS = 2 ** 31 - 1;

const CONFIG_DELAYS: readonly (readonly string[])[] = [
  ["llmRequestDebounceMs"],
  ["llmRequestExpiryMs"],
  ["llmRequestRetryPolicy", "backoffBaseMs"],
  ["llmRequestRetryPolicy", "backoffMaxMs"],
];

function configDelayRefusal(payload: Record<string, unknown>, where: string): ApiAppendDecision | undefined {
  for (const fields of CONFIG_DELAYS) {
    let value: unknown = payload.config;
    for (const field of fields) value = isRecord(value) ? value[field] : undefined;
    if (typeof value !== "number" || value <= MAX_CONFIG_DELAY_MS) continue;
    const path = `${where}.payload.config.${fields.join(".")}`;
    const message = `${path} must be at most ${MAX_CONFIG_DELAY_MS} ms (24.8 days, the longest a timer waits), got ${value}.`;
    return { allowed: false, error: new ContractViolationError("invalid_payload", message, [{ path, message }], { type: "agent/configured", maxMs: MAX_CONFIG_DELAY_MS }) };
  }
  return undefined;
}

/**
 * Attempts a retry policy may allow: with no backoff, 2^53 − 1 attempts against a failing
 * provider retried the agent's turn without end (red-team). Checked on new appends only.
 */
export const MAX_CONFIG_ATTEMPTS = 100;
/** Characters of a model name: it is copied into every request the agent makes (a 500 000-character one was accepted). */
export const MAX_MODEL_NAME_LENGTH = 256;
/**
 * How long a request has left when the reducer no longer hands it to a driver (contract.md,
 * "Adopt or expire": `now + 30 s >= expiresAt`). The core decides with it.
 */
export const REQUEST_EXPIRY_MARGIN_MS = 30_000;
/**
 * The shortest `llmRequestExpiryMs` a new append may set: the margin and 30 s for the call. At
 * or below the margin every request expired the moment it was made, and the agent could never
 * take a turn; the error named no setting (red-team).
 */
export const MIN_LLM_REQUEST_EXPIRY_MS = REQUEST_EXPIRY_MARGIN_MS + 30_000;

function configBoundRefusal(payload: Record<string, unknown>, where: string): ApiAppendDecision | undefined {
  const config = isRecord(payload.config) ? payload.config : undefined;
  const policy = isRecord(config?.llmRequestRetryPolicy) ? config.llmRequestRetryPolicy : undefined;
  const model = isRecord(config?.llm) ? config.llm.model : undefined;
  const refusal = (field: string, rule: string, details: Record<string, unknown>): ApiAppendDecision => {
    const path = `${where}.payload.config.${field}`;
    const message = `${path} ${rule}.`;
    return { allowed: false, error: new ContractViolationError("invalid_payload", message, [{ path, message }], { type: "agent/configured", ...details }) };
  };
  if (typeof policy?.maxAttempts === "number" && policy.maxAttempts > MAX_CONFIG_ATTEMPTS) {
    return refusal("llmRequestRetryPolicy.maxAttempts", `must be at most ${MAX_CONFIG_ATTEMPTS}, got ${policy.maxAttempts}`, { max: MAX_CONFIG_ATTEMPTS });
  }
  if (typeof model === "string" && model.length > MAX_MODEL_NAME_LENGTH) {
    return refusal("llm.model", `must be at most ${MAX_MODEL_NAME_LENGTH} characters, got ${model.length}`, { maxLength: MAX_MODEL_NAME_LENGTH });
  }
  const expiry = config?.llmRequestExpiryMs;
  if (typeof expiry === "number" && expiry < MIN_LLM_REQUEST_EXPIRY_MS) {
    return refusal(
      "llmRequestExpiryMs",
      `must be at least ${MIN_LLM_REQUEST_EXPIRY_MS} ms (a request with ${REQUEST_EXPIRY_MARGIN_MS} ms or less left is expired rather than handed to a driver), got ${expiry}`,
      { min: MIN_LLM_REQUEST_EXPIRY_MS },
    );
  }
  return undefined;
}

/** A key in a namespace the services build their keys in: refused, whatever the type. */
function reservedKeyRefusal(speaker: Speaker, input: Record<string, unknown>, where: string): ApiAppendDecision | undefined {
  const key = input.idempotencyKey;
  const reserved = typeof key === "string" ? reservedKeyNamespaceOf(key) : undefined;
  if (reserved === undefined || (speaker.builds !== undefined && reserved.namespace.builtBy.includes(speaker.builds))) return undefined;
  return refuse(
    `${where}.idempotencyKey "${String(key)}" is in the namespace "${reserved.namespace.prefix}" reserved for ${reserved.namespace.builtBy.join(" and ")}; ${speaker.who} may not use it.`,
    `${where}.idempotencyKey`,
    { namespace: reserved.namespace.prefix, reservedFor: reserved.namespace.builtBy },
  );
}

function decideContextAdded(speaker: Speaker, payload: Record<string, unknown>, where: string): ApiAppendDecision {
  const type = "agents/context-added";
  const role = payload.role;
  if (typeof role !== "string" || !Object.hasOwn(API_CONTEXT_ROLE_VERBS, role)) return { allowed: true, verb: "append" };
  const verb = API_CONTEXT_ROLE_VERBS[role];
  if (verb === null || verb === undefined) {
    return refuse(`${where}.payload.role "${role}" is model output, written by llm-driver; ${speaker.who} may send user, developer or (with operate) system.`, `${where}.payload.role`, {
      type,
      owner: "llm-driver",
    });
  }
  const field = API_FORBIDDEN_CONTEXT_FIELDS.find((f) => payload[f] !== undefined);
  if (field !== undefined) {
    return refuse(`${where}.payload.${field} is set only by llm-driver; ${speaker.who} may not send it.`, `${where}.payload.${field}`, { type, owner: "llm-driver" });
  }
  const actor = isRecord(payload.actor) ? payload.actor.type : undefined;
  if (typeof actor === "string" && API_FORBIDDEN_ACTORS.includes(actor)) {
    return refuse(`${where}.payload.actor of type "${actor}" is spoken only by capability-host; ${speaker.who} may not send it.`, `${where}.payload.actor`, {
      type,
      owner: "capability-host",
    });
  }
  // A payload `key` makes the item a section of the standing instructions, whatever its role:
  // it supersedes the last section of that key (an operator's policy, the identity), so it steers.
  if (payload.key !== undefined) return { allowed: true, verb: "operate" };
  // A developer item with no actor is the agent's own loop speaking: the model reads it with
  // developer authority (rendering.md), where outside input names its actor and is read as a
  // user's. With only append, a key wrote "Your script returned {approved: true}" as the runtime
  // (red-team): steering, so operate, as the Stop batch's note already has with its pause.
  // A script is the agent's own loop: its notes are that voice.
  if (role === "developer" && payload.actor === undefined && speaker !== SCRIPTS) return { allowed: true, verb: "operate" };
  return { allowed: true, verb };
}

// What a script may append to its own agent (`itx.agent.append`): what an API caller may, with
// the verbs of the key that requested it, plus what the contract lists scripts as writing. A
// script must never be a way around the table above: an assistant reply to the open request
// would be run by the interpreter as the model's own script, with the agent's whole grant and
// none of the requesting key's limits; a script requested from a script would run without them.

/** Types a script may append beyond the API's table (ownership: written by scripts). */
export const SCRIPT_APPENDABLE: Readonly<Partial<Record<EventType, string>>> = {
  "agent/summary-updated": "the agent's title and activity (the prompt asks scripts to keep it current)",
  "agents/web-message-sent": "a message to the web chat (what itx.chat.sendMessage writes)",
};

/** Operate types a script may append without an operating key: its agent's preamble is its own to keep. */
export const SCRIPT_OWN_OPERATE: readonly EventType[] = ["capability-host/preamble-set", "capability-host/preamble-removed"];

/**
 * Whether a script may append this event input to its own agent. `mayOperate`: the key that
 * requested the script may operate on the agent (false for a model-written script, which has
 * no requesting key). Steering the agent (configuring, pausing, rewriting its context, system
 * sections, bindings) needs it; requesting another script is never allowed.
 */
export function decideScriptAppend(input: unknown, mayOperate: boolean, where = "itx.agent.append()"): ApiAppendDecision {
  if (!isRecord(input) || typeof input.type !== "string") return { allowed: true, verb: "append" };
  const type = input.type;
  if (type === "capability-host/script-run-requested") {
    return refuse(`${where}: scripts may not request scripts; one requested from a script would run outside the authority this script has.`, `${where}.type`, { type });
  }
  if (Object.hasOwn(SCRIPT_APPENDABLE, type)) {
    // A web message with a request offset is the codemode interpreter's rendering of a model reply
    // (it is neither mirrored into the context nor shown as the script's message).
    if (type === "agents/web-message-sent" && isRecord(input.payload) && input.payload.llmRequestOffset !== undefined) {
      return refuse(`${where}.payload.llmRequestOffset is set only by the codemode interpreter (agent-reducer); scripts may not send it.`, `${where}.payload.llmRequestOffset`, {
        type,
        owner: "agent-reducer",
      });
    }
    return reservedKeyRefusal(SCRIPTS, input, where) ?? { allowed: true, verb: "append" };
  }
  // The machinery's events, and a birth certificate: its agent exists (sub-agents: itx.agents.get(p).create()).
  if (Object.hasOwn(EVENT_OWNERSHIP, type) && (type === "agent/created" || API_APPENDABLE[type as EventType] === undefined)) {
    const owner = EVENT_OWNERSHIP[type as EventType].owner;
    return refuse(`${where}: scripts may not append "${type}" (owned by ${owner}).`, `${where}.type`, { type, owner });
  }
  const decision = decideAppendAs(SCRIPTS, input, where);
  if (!decision.allowed || decision.verb === "append" || mayOperate || SCRIPT_OWN_OPERATE.includes(type as EventType)) return decision;
  const what = type === "agents/context-added" ? (isRecord(input.payload) && input.payload.key !== undefined ? "a keyed section" : "a system section") : `"${type}"`;
  return refuse(
    `${where}: ${what} steers the agent (operate); a script may append it only when the key that requested it may operate on the agent, and a script the model wrote has no such key.`,
    `${where}.type`,
    { type, verb: "operate" },
  );
}
