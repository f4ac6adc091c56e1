// The wire protocol between capability providers and capability hosts (NATS request/reply,
// JSON bodies, parsed with these schemas on both sides).
//
//   agentrt.capabilities.register.<ns> provider → host   RegisterRequest  → RegisterReply
//   agentrt.capabilities.revoke.<ns>   provider → host   RevokeRequest    → RegisterReply
//   agentrt.capabilities.call.<ns>     host → provider   CallRequest      → CallAccepted, then CallReply
//   agentrt.capabilities.alive.<id>    host → provider   (empty)          → (empty), while instance <id> lives
//
// A host that sends a call with the header `Agentrt-Call-Accepted: 1` is answered twice on the
// reply subject: at once with the instance that took the call (`{ accepted: instanceId }`),
// then with the result. While it waits for the result the host asks that instance whether it
// still lives; "no responders" there means the process that had the call is gone (killed,
// crashed), and the call fails at once instead of after the host's call timeout. Without the
// header (a host of an earlier version) the provider answers only with the result, and a
// provider of an earlier version ignores the header: either way the call works as before, with
// the timeout as its only bound.
//
// A namespace is registered and revoked on its own subject, so NATS permissions can bind a
// provider's user to its namespaces: the user of a provider of `repo` may publish on
// `register.repo` and subscribe to `call.repo`, and nothing else of another provider's (service-kit
// `providerUserPermissions`). A host refuses a registration whose body names another namespace
// than its subject. Hosts still answer the single `agentrt.capabilities.register` of earlier
// providers, and a provider falls back to it when no host answers its namespace's subject (a host
// of an earlier version); only a user granted that subject may use it.
//
// A registration is a lease: the provider re-registers (heartbeat) well within `ttlMs`; a
// namespace whose lease lapsed is "gone" and calls to it fail with an error naming it.

import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";

/**
 * The reply subjects of the `capability-provider` NATS user (service-kit's `natsInboxPrefix`). A
 * provider that connects as that user sets it as nats.js's `inboxPrefix`: the user may read only
 * its own replies (its registration's answer among them), not every user's `_INBOX.>`.
 */
export const PROVIDER_INBOX_PREFIX = inboxPrefixOf("capability-provider");

/**
 * The reply subjects of any NATS user (service-kit's `natsInboxPrefix`, the same rule): a provider
 * that connects as its own user (`provider-repo`, say) sets this as nats.js's `inboxPrefix`.
 */
export function inboxPrefixOf(natsUser: string): string {
  return `_INBOX_${natsUser}`;
}

/**
 * Whether a request reached us as a JetStream delivery (its reply subject is a stream's ack
 * subject) rather than from its sender. nats-server (2.9 to this day, nats-server#8274) lets
 * whoever may create a push consumer name any deliver subject without being allowed to publish
 * there: the gateway's user relayed a provider call carrying any caller's authority, and an
 * interrupt stopping another tenant's model call, through a consumer of the event stream
 * (red-team). A real request comes from its sender's inbox; a relayed one is dropped. The same
 * rule as service-kit's `relayedByJetStream`.
 */
export function relayedByJetStream(reply: string | undefined): boolean {
  return reply !== undefined && reply.startsWith("$JS.");
}

/** The single registration subject of earlier providers (every namespace on one subject). */
export const REGISTER_SUBJECT = "agentrt.capabilities.register";
export const REVOKE_SUBJECT = "agentrt.capabilities.revoke";
export const CALL_SUBJECT_PREFIX = "agentrt.capabilities.call.";
export const ALIVE_SUBJECT_PREFIX = "agentrt.capabilities.alive.";
/** The call header by which a host asks to be told which instance took the call. */
export const CALL_ACCEPTED_HEADER = "Agentrt-Call-Accepted";

/** An instance id is one NATS subject token (its liveness subject ends with it). */
export const INSTANCE_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/** A namespace is one identifier: it becomes `itx.<namespace>`. */
export const NAMESPACE_PATTERN = /^[a-z][A-Za-z0-9]{0,62}$/;
export const RESERVED_NAMESPACES: ReadonlySet<string> = new Set([
  "chat", "agent", "streams", "agents", "kv", "files", "capabilityHost", "docs",
]);

/** Where a provider registers (and renews) `namespace`. */
export function registerSubject(namespace: string): string {
  return `${REGISTER_SUBJECT}.${namespace}`;
}

export function revokeSubject(namespace: string): string {
  return `${REVOKE_SUBJECT}.${namespace}`;
}

export function callSubject(namespace: string): string {
  return `${CALL_SUBJECT_PREFIX}${namespace}`;
}

/** Where a provider instance answers while it lives (its instance id, which is one subject token). */
export function aliveSubject(instanceId: string): string {
  return `${ALIVE_SUBJECT_PREFIX}${instanceId}`;
}

const namespaceSchema = z
  .string()
  .regex(NAMESPACE_PATTERN, "must be an identifier: a lower-case letter then letters or digits (at most 63)")
  .refine((ns) => !RESERVED_NAMESPACES.has(ns), "is a built-in itx namespace and cannot be provided");

export const registerRequestSchema = z.strictObject({
  namespace: namespaceSchema,
  /** Unique per provider process, so a late revoke of an old instance cannot drop a new one. */
  instanceId: z.string().regex(INSTANCE_ID_PATTERN, "must be 1-128 letters, digits, '-' or '_' (it names a NATS subject token)"),
  methods: z.array(z.string().regex(/^[A-Za-z_$][\w$]*$/, "must be an identifier")).min(1),
  /** TypeScript declarations merged into `interface Itx` (e.g. `interface Itx { repo: {...} }`). */
  declarations: z.string().max(200_000),
  ttlMs: z.number().int().min(1_000).max(600_000),
});
export type RegisterRequest = z.infer<typeof registerRequestSchema>;

export const revokeRequestSchema = z.strictObject({ namespace: namespaceSchema, instanceId: z.string().min(1) });
export type RevokeRequest = z.infer<typeof revokeRequestSchema>;

export const registerReplySchema = z.union([
  z.strictObject({ ok: z.literal(true) }),
  /** `retryable`: the host could not record the registration (NATS not answering), not a refusal. */
  z.strictObject({ ok: z.literal(false), error: z.string(), retryable: z.boolean().optional() }),
]);
export type RegisterReply = z.infer<typeof registerReplySchema>;

const scopeShape = z.strictObject({ prefix: z.string(), verbs: z.array(z.string()) });

/**
 * The calling script's authority (docs/security.md "Script authority"): the agent's grant beyond
 * its own subtree and, for API-requested scripts, the requesting key's scopes. A provider that
 * acts on stream paths checks them with the contract's rules (`scopesAllow`, `authorityRefusal`).
 */
export const callerAuthoritySchema = z.strictObject({
  grant: z.array(scopeShape),
  requester: z.strictObject({ keyId: z.string(), scopes: z.array(scopeShape) }).optional(),
});

export const callerSchema = z.strictObject({ agentPath: z.string(), executionId: z.string(), authority: callerAuthoritySchema.optional() });
export type Caller = z.infer<typeof callerSchema>;

export const callRequestSchema = z.strictObject({
  method: z.string().min(1),
  args: z.array(z.unknown()),
  caller: callerSchema,
});
export type CallRequest = z.infer<typeof callRequestSchema>;

/** The first answer to a call: which provider instance is running it. */
export const callAcceptedSchema = z.strictObject({ accepted: z.string().regex(INSTANCE_ID_PATTERN) });
export type CallAccepted = z.infer<typeof callAcceptedSchema>;

export const callReplySchema = z.union([
  z.strictObject({ ok: z.literal(true), result: z.unknown().optional() }),
  z.strictObject({ ok: z.literal(false), error: z.string() }),
]);
export type CallReply = z.infer<typeof callReplySchema>;

/**
 * How many bytes of body one NATS message on `nc` may carry with `headersRoom` bytes left for its
 * headers: the server's `max_payload` counts both, and the client refuses to publish past it.
 * Undefined until the connection has the server's limit. The host checks a call's arguments with
 * it, a provider its result.
 */
export function bodyRoom(nc: NatsConnection, headersRoom = 0): number | undefined {
  const limit = nc.info?.max_payload;
  return limit === undefined ? undefined : limit - headersRoom;
}

/** Parses JSON bytes with a schema; returns an error message naming the field on failure. */
export function parseJson<T>(schema: z.ZodType<T>, text: string): { ok: true; value: T } | { ok: false; error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, error: "body is not JSON" };
  }
  const parsed = schema.safeParse(raw);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, error: parsed.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`).join("; ") };
}
