// Script authority at the gateway (docs/security.md "Script authority"). Two rules, applied
// to every create and append that comes through the API (HTTP and gRPC alike):
//  - a key cannot grant what it does not hold: an `agent/created` / `agent/configured` (or a
//    create body) carrying a grant wider than the calling key's scopes is a 403 naming the
//    prefix and verb;
//  - an API-requested script carries the requesting key's scopes: the gateway stamps
//    `requester` on every `capability-host/script-run-requested`, OVERWRITING any value the
//    client sent (the client cannot speak for a key; the host trusts only this stamp). The
//    stamp holds the parts of the key's scopes inside the agent's reach (its subtree and grant),
//    all a script could use: every reader of the agent sees it, and the key's whole list had
//    shown them the key's prefixes in other tenants.
// Dev mode's principal holds `/` admin, so it may grant anything, and stamps admin on the agent's reach.

import {
  agentGrantSchema,
  type AgentGrant,
  agentScopes,
  applyGrantEvent,
  EVENT_URI_PREFIX,
  grantExcess,
  type GrantState,
  type Requester,
  scopesWithin,
} from "@agentrt/contract";
import { GatewayError } from "../errors.ts";
import type { Principal } from "./authenticator.ts";

const GRANT_TYPES: ReadonlySet<string> = new Set(["agent/created", "agent/configured"]);
const SCRIPT_REQUESTED = "capability-host/script-run-requested";

/** 403 unless every (prefix, verb) of `grant` lies within the key's scopes. */
export function assertGrantWithinKey(principal: Principal, grant: AgentGrant | undefined, field = "grant"): void {
  if (grant === undefined) return;
  const excess = grantExcess(grant, principal.scopes);
  if (excess === null) return;
  throw new GatewayError(
    "forbidden",
    `Key ${principal.keyId} may not grant ${excess.verb} on ${excess.prefix}: a grant cannot be wider than the granting key's scope (${field}).`,
    { field, prefix: excess.prefix, verb: excess.verb },
  );
}

/** The requester stamp of a principal on an agent: its key id, and its scopes inside the agent's reach. */
export function requesterOf(principal: Principal, agentPath: string, grant: AgentGrant): Requester {
  return { keyId: principal.keyId, scopes: scopesWithin(principal.scopes, agentScopes({ agentPath, grant })) };
}

/**
 * Checks the grants in a batch of raw event inputs for `agentPath` and returns the batch with
 * every script request stamped. `storedGrant` (the agent's grant as its stream stands) is read
 * only for a batch holding a script request, which is stamped against it and the batch's own
 * grant events before it, as the host folds them. Malformed events pass through unchanged: the
 * store's validation rejects them with the field and the rule.
 */
export async function authorizeBatch(principal: Principal, agentPath: string, events: readonly unknown[], storedGrant: () => Promise<GrantState>): Promise<unknown[]> {
  const typed = events.map((raw) => {
    if (typeof raw !== "object" || raw === null) return undefined;
    const event = raw as { type?: unknown; payload?: unknown };
    if (typeof event.type !== "string" || typeof event.payload !== "object" || event.payload === null) return undefined;
    return { type: event.type.startsWith(EVENT_URI_PREFIX) ? event.type.slice(EVENT_URI_PREFIX.length) : event.type, payload: event.payload as Record<string, unknown> };
  });
  let grant = typed.some((event) => event?.type === SCRIPT_REQUESTED) ? await storedGrant() : undefined;
  return events.map((raw, index) => {
    const event = typed[index];
    if (event === undefined) return raw;
    if (grant !== undefined) grant = applyGrantEvent(grant, event);
    if (GRANT_TYPES.has(event.type) && event.payload.grant !== undefined) {
      const parsed = agentGrantSchema.safeParse(event.payload.grant);
      if (parsed.success) assertGrantWithinKey(principal, parsed.data, `events.${index}.payload.grant`);
      return raw;
    }
    if (event.type === SCRIPT_REQUESTED && grant !== undefined) return { ...(raw as object), payload: { ...event.payload, requester: requesterOf(principal, agentPath, grant.grant) } };
    return raw;
  });
}
