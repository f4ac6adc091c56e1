// Script authority (docs/security.md "Script authority"): what a codemode script may touch.
// An agent's grant is the list of stream-path prefixes (with verbs) it was given on
// `agent/created` or `agent/configured`; its own path and everything under it are always
// granted. A script requested through the API is further limited to the requesting key's
// scopes, which the gateway stamps on the request as `requester`. The rules live here, pure,
// so the gateway (who may grant what) and the capability host (may this call go ahead) share
// them.

import { z } from "zod";

/** The verbs a grant can hold: `read` (streams, getEvent, files/KV reads) and `append` (everything that writes). */
export const GRANT_VERBS = ["read", "append"] as const;
export type GrantVerb = (typeof GRANT_VERBS)[number];

/** A stream-path prefix ("/" or a stream path), matched at segment boundaries. */
const prefixSchema = z.string().regex(/^\/(?:[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*)?$/, 'must be "/" or a stream path such as /agents/shared');

export const grantEntrySchema = z.strictObject({
  prefix: prefixSchema,
  verbs: z.array(z.enum(GRANT_VERBS)).min(1),
  /** The stream at `prefix` only, not the streams under it (what a sub-agent holds on its creator). */
  exact: z.literal(true).optional(),
});

/** The prefixes granted to an agent beyond its own subtree (replaced wholesale by each event that carries one). */
export const agentGrantSchema = z.array(grantEntrySchema).max(64);
export type GrantEntry = z.infer<typeof grantEntrySchema>;
export type AgentGrant = z.infer<typeof agentGrantSchema>;

/** Scopes a requester stamp may carry: a key's 64, or an agent's reach of 65 with the key's scopes under it. */
export const MAX_REQUESTER_SCOPES = 192;

/** A key's scopes as the gateway stamps them: verbs are the key's own (`admin` implies every verb). */
export const requesterSchema = z.strictObject({
  keyId: z.string().min(1),
  // 64 key scopes, or (narrowed to an agent's reach, `scopesWithin`) up to its 65 reach entries and the key's scopes under them.
  scopes: z.array(z.strictObject({ prefix: z.string().startsWith("/"), verbs: z.array(z.string().min(1)).min(1) })).max(MAX_REQUESTER_SCOPES),
});
export type Requester = z.infer<typeof requesterSchema>;

/** Anything with a prefix and verbs: key scopes and grant entries alike. */
export interface ScopeLike {
  readonly prefix: string;
  readonly verbs: readonly string[];
  /** Covers the stream at `prefix` only (a grant entry's `exact`). */
  readonly exact?: boolean;
}

/** Whether a scope covers `path`: under its prefix at a segment boundary, or the prefix itself when exact. */
export function scopeCovers(scope: ScopeLike, path: string): boolean {
  return scope.exact === true ? path === scope.prefix : pathUnder(path, scope.prefix);
}

/** True when a path lies under a prefix at a segment boundary (`/a` covers `/a/b`, not `/ab`). */
export function pathUnder(path: string, prefix: string): boolean {
  if (prefix === "/") return true;
  const p = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix;
  return path === p || path.startsWith(`${p}/`);
}

/** `admin` implies every verb. */
export function scopesAllow(scopes: readonly ScopeLike[], verb: string, path: string): boolean {
  return scopes.some((s) => scopeCovers(s, path) && (s.verbs.includes(verb) || s.verbs.includes("admin")));
}

/**
 * The first (prefix, verb) of `grant` that `scopes` do not cover, or null when the whole grant
 * lies within them: a key cannot grant what it does not hold.
 */
export function grantExcess(grant: AgentGrant, scopes: readonly ScopeLike[]): { prefix: string; verb: GrantVerb } | null {
  for (const entry of grant) {
    for (const verb of entry.verbs) if (!scopesAllow(scopes, verb, entry.prefix)) return { prefix: entry.prefix, verb };
  }
  return null;
}

/** An agent's grant as its events fold it, and whether its birth certificate has been folded. */
export interface GrantState {
  readonly grant: AgentGrant;
  readonly born: boolean;
}

export const UNBORN_GRANT: GrantState = { grant: [], born: false };

/**
 * The grant in force after `event`: the birth certificate's (the first `agent/created`), then
 * the last `agent/configured` carrying one. A later `agent/created` changes nothing (contract.md):
 * it had replaced the grant, so a key that may only append could widen or wipe what an
 * operator had granted the agent's scripts, a change that needs `operate` as `agent/configured`.
 */
export function applyGrantEvent(state: GrantState, event: { readonly type: string; readonly payload: unknown }): GrantState {
  if (event.type === "agent/created") return state.born ? state : { grant: grantCarried(event.payload) ?? state.grant, born: true };
  if (event.type !== "agent/configured") return state;
  const grant = grantCarried(event.payload);
  return grant === undefined ? state : { ...state, grant };
}

/** The grant an event's payload carries, or undefined (none, or not a grant). */
function grantCarried(payload: unknown): AgentGrant | undefined {
  if (typeof payload !== "object" || payload === null || !("grant" in payload)) return undefined;
  // Stored events as any client sees them are unvalidated JSON: parsed, never cast.
  const parsed = agentGrantSchema.safeParse(payload.grant);
  return parsed.success ? parsed.data : undefined;
}

/** Who a script acts for: its agent, the agent's grant, and (API-requested only) the requesting key. */
export interface ScriptAuthority {
  readonly agentPath: string;
  readonly grant: readonly ScopeLike[];
  readonly requester?: { readonly keyId: string; readonly scopes: readonly ScopeLike[] };
  /**
   * Why the script may not operate on its agent although its requesting key may (the key's
   * `operate` is then left out of `requester.scopes`): code it runs was written without that
   * authority (the host's authority/).
   */
  readonly operateWithheld?: string;
}

/** The agent's effective scopes: its own subtree (read and append) plus its grant. */
export function agentScopes(authority: Pick<ScriptAuthority, "agentPath" | "grant">): ScopeLike[] {
  return [{ prefix: authority.agentPath, verbs: GRANT_VERBS }, ...authority.grant];
}

/**
 * The parts of a key's `scopes` inside `reach` (an agent's `agentScopes`): what a script the key
 * requests could ever use, since every call is held to the agent's reach too (`authorityRefusal`).
 * A scope over a reach entry gives that entry with the scope's verbs; a scope under one is kept.
 * It is what the gateway stamps as a script's requester, which every reader of the agent sees: the
 * key's whole list had shown them its prefixes in other tenants. For any path in `reach`, the
 * result allows exactly what `scopes` allow (an exact entry is given as its prefix, which the
 * reach's own exact entry still holds to the one stream).
 */
export function scopesWithin(scopes: readonly ScopeLike[], reach: readonly ScopeLike[]): { prefix: string; verbs: string[] }[] {
  const kept = new Map<string, { prefix: string; verbs: string[] }>();
  const keep = (prefix: string, verbs: readonly string[]) => {
    const held = kept.get(prefix);
    kept.set(prefix, { prefix, verbs: held === undefined ? [...verbs] : [...new Set([...held.verbs, ...verbs])] });
  };
  for (const scope of scopes) {
    if (scope.exact === true) continue;
    for (const entry of reach) {
      if (pathUnder(entry.prefix, scope.prefix)) keep(entry.prefix, scope.verbs);
      else if (entry.exact !== true && pathUnder(scope.prefix, entry.prefix)) keep(scope.prefix, scope.verbs);
    }
  }
  // An entry another kept one covers with every verb it has adds nothing.
  const all = [...kept.values()];
  return all.filter((entry) => !all.some((other) => other !== entry && pathUnder(entry.prefix, other.prefix) && entry.verbs.every((v) => other.verbs.includes(v) || other.verbs.includes("admin"))));
}

/**
 * Why a script may not `verb` `path`, or null when it may. The message names the path and the
 * grant that is missing, listing what the script does hold for that verb.
 */
export function authorityRefusal(authority: ScriptAuthority, verb: GrantVerb, path: string): string | null {
  const own = agentScopes(authority);
  if (!scopesAllow(own, verb, path)) {
    return `${path} is outside this script's grant (${verb}: ${heldPrefixes(own, verb)})`;
  }
  const requester = authority.requester;
  if (requester !== undefined && !scopesAllow(requester.scopes, verb, path)) {
    return `${path} is outside the scope of key ${requester.keyId} that requested this script (${verb}: ${heldPrefixes(requester.scopes, verb)})`;
  }
  return null;
}

function heldPrefixes(scopes: readonly ScopeLike[], verb: string): string {
  const held = scopes.filter((s) => s.verbs.includes(verb) || s.verbs.includes("admin")).map((s) => (s.exact === true ? `${s.prefix} (only)` : s.prefix));
  return held.length === 0 ? "none" : held.join(", ");
}

/**
 * A birth batch whose `agent/created` carries `grant` (other events unchanged). Used by the
 * gateway (the grant a key gives on create) and the host (a sub-agent may answer its creator).
 */
export function withBirthGrant<E>(batch: readonly E[], grant: AgentGrant): E[] {
  return batch.map((event) => {
    const e = event as { type?: unknown; payload?: unknown };
    if (e.type !== "agent/created" || typeof e.payload !== "object" || e.payload === null) return event;
    return { ...event, payload: { ...e.payload, grant } };
  });
}

/**
 * The grant of an agent a script creates: it may message (append to) its creator, nothing more.
 * Exact: a prefix entry had also let a sub-agent message its siblings and create agents beside
 * itself under its creator's path.
 */
export function creatorGrant(creatorPath: string): AgentGrant {
  return [{ prefix: creatorPath, verbs: ["append"], exact: true }];
}

/** The grant of an agent from its events as any client sees them (unvalidated JSON): parsed, never cast. */
export function grantOfEvents(events: readonly { readonly type: string; readonly payload: unknown }[]): AgentGrant {
  return events.reduce(applyGrantEvent, UNBORN_GRANT).grant;
}
