// Script authority at the gateway (docs/security.md "Script authority"). Two rules, applied
// to every create and append that comes through the API (HTTP and gRPC alike):
//  - a key cannot grant what it does not hold: an `agent/created` / `agent/configured` (or a
//    create body) carrying a grant wider than the calling key's scopes is a 403 naming the
//    prefix and verb;
//  - an API-requested script carries the requesting key's scopes: the gateway stamps
//    `requester` on every `capability-host/script-run-requested`, OVERWRITING any value the
//    client sent (the client cannot speak for a key; the host trusts only this stamp).
// Dev mode's principal holds `/` admin, so it may grant anything and stamps `/` admin.

import { agentGrantSchema, type AgentGrant, EVENT_URI_PREFIX, grantExcess, type Requester } from "@agentrt/contract";
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

/** The requester stamp of a principal (its key id and scopes, verbatim). */
export function requesterOf(principal: Principal): Requester {
  return { keyId: principal.keyId, scopes: principal.scopes.map((s) => ({ prefix: s.prefix, verbs: [...s.verbs] })) };
}

/**
 * Checks the grants in a batch of raw event inputs and returns the batch with every script
 * request stamped. Malformed events pass through unchanged: the store's validation rejects
 * them with the field and the rule.
 */
export function authorizeBatch(principal: Principal, events: readonly unknown[]): unknown[] {
  return events.map((raw, index) => {
    if (typeof raw !== "object" || raw === null) return raw;
    const event = raw as { type?: unknown; payload?: unknown };
    if (typeof event.type !== "string" || typeof event.payload !== "object" || event.payload === null) return raw;
    const type = event.type.startsWith(EVENT_URI_PREFIX) ? event.type.slice(EVENT_URI_PREFIX.length) : event.type;
    const payload = event.payload as Record<string, unknown>;
    if (GRANT_TYPES.has(type) && payload.grant !== undefined) {
      const grant = agentGrantSchema.safeParse(payload.grant);
      if (grant.success) assertGrantWithinKey(principal, grant.data, `events.${index}.payload.grant`);
      return raw;
    }
    if (type === SCRIPT_REQUESTED) return { ...event, payload: { ...payload, requester: requesterOf(principal) } };
    return raw;
  });
}
