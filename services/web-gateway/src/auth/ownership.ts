// Who may append what through the API: every append path (HTTP batch append, gRPC) calls
// `authorizeAppends` before anything reaches the store. The rules are the contract's table
// (API_APPENDABLE, reserved key namespaces); this module only applies them to a caller's key:
// a type or key the contract keeps for a service is a 403 naming it, and each allowed event
// needs its verb (`append` for user input, `operate` for steering) on the stream's path.

import { decideApiAppend, type ApiVerb } from "@agentrt/contract";
import { GatewayError } from "../errors.ts";
import type { Principal } from "./authenticator.ts";
import { scopeAllows } from "./keys.ts";

/** The verb each event of a batch needs, in order; throws the contract's 403 for a refused one. */
export function verbsForAppend(events: readonly unknown[]): ApiVerb[] {
  return events.map((event, index) => {
    const decision = decideApiAppend(event, `events[${index}]`);
    if (!decision.allowed) throw decision.error;
    return decision.verb;
  });
}

/** The verb a route checks up front: `operate` only when every event needs it, else `append`. */
export function appendRouteVerb(events: readonly unknown[]): ApiVerb {
  const verbs = events.map((event) => {
    const decision = decideApiAppend(event);
    return decision.allowed ? decision.verb : "append";
  });
  return verbs.length > 0 && verbs.every((v) => v === "operate") ? "operate" : "append";
}

/**
 * Refuses (403) a batch an outside caller may not append to `streamPath`: a machinery type,
 * a reserved idempotency key, a service-only field, or an event whose verb the key lacks.
 */
export function authorizeAppends(principal: Principal | null, streamPath: string, events: readonly unknown[]): void {
  const verbs = verbsForAppend(events);
  if (principal === null) return;
  verbs.forEach((verb, index) => {
    if (scopeAllows(principal.scopes, verb, streamPath)) return;
    const type = (events[index] as { type?: unknown }).type;
    throw new GatewayError(
      "forbidden",
      `Key ${principal.keyId} may not append events[${index}] ("${String(type)}") to ${streamPath}: it needs the ${verb} verb.`,
      { verb, streamPath, type },
    );
  });
}
