// One NATS user per service, with least-privilege permissions: the single source of truth for
// what each service may publish and subscribe to. `renderNatsAuthorization` turns it into the
// nats-server (2.9+) `authorization { users: [...] }` block used by the quickstart and (as a
// generated file) by the Helm chart. The names below are the runtime's: the event store's
// stream and subject prefixes, the work queue, the KV buckets and object stores, the core-NATS
// subjects of interrupts and capability providers; test/security/nats-permissions.int.test.ts
// checks them against the modules that define them and runs a whole turn with every service
// connected as its own user, which is what proves these lists complete.
//
// JetStream is driven by requests on `$JS.API.*` (answered on each user's own inbox prefix,
// `natsInboxPrefix`), so a grant on a
// stream is a list of API subjects, not a wildcard over `$JS.API.>`: nobody but its owners may
// create, delete or purge a stream, and only the services that need one can read it.

import { INTERRUPT_SUBJECT } from "./interrupts.ts";
import { LEASE_LIVENESS_PREFIX } from "./leases.ts";
import { WORK_CLAIM_LIVENESS_PREFIX, workClaimsBucket } from "./work-claims.ts";
import { LEGACY_WORK_STREAM, WORK_STREAMS } from "./work-queue.ts";

export type NatsServiceUser = "web-gateway" | "agent-reducer" | "llm-driver" | "capability-host" | "capability-provider";

export interface NatsPermissions {
  readonly publish: { readonly allow: readonly string[] };
  readonly subscribe: { readonly allow: readonly string[] };
  /**
   * May answer requests on any reply subject: `true` for one message per request, a number for
   * that many (a provider answers a call twice: which instance took it, then the result).
   */
  readonly allowResponses: boolean | number;
}

/** The runtime's NATS names (defaults of the modules that own them). */
export const NATS_NAMES = {
  eventStream: "AGENT_EVENTS",
  durablePrefix: "ev",
  ephemeralPrefix: "eph",
  /** One work-queue stream per kind (work-queue.ts WORK_STREAMS). */
  llmWorkStream: WORK_STREAMS.llm,
  scriptWorkStream: WORK_STREAMS.script,
  /** The single work stream of earlier versions, removed when the per-kind streams are created. */
  legacyWorkStream: LEGACY_WORK_STREAM,
  workSubjectPrefix: "work",
  leasesBucket: "agentrt_leases",
  /** Reducer replicas answer here while connected; a dead one's leases are taken at once. */
  leaseLivenessPrefix: LEASE_LIVENESS_PREFIX,
  snapshotsBucket: "agentrt_agent_snapshots",
  /** Idempotency-key reservations of the event store (`<eventStream>_KEYS`). */
  keyIndexBucket: "AGENT_EVENTS_KEYS",
  agentKvBucket: "AGENT_KV",
  providersBucket: "CAPABILITY_PROVIDERS",
  agentFilesBucket: "AGENT_FILES",
  /** itx.files listed by agent: one key per file (capability-host agent-storage.ts). */
  agentFilesIndexBucket: "AGENT_FILES_INDEX",
  hostLivenessBucket: "agentrt_host_liveness",
  scriptRunsBucket: "agentrt_script_runs",
  interruptSubject: INTERRUPT_SUBJECT,
  capabilitiesPrefix: "agentrt.capabilities",
  /** Claims of in-flight work items, a bucket per kind: one key per worker, the ack subjects of the items it runs. */
  llmWorkClaimsBucket: workClaimsBucket("llm"),
  scriptWorkClaimsBucket: workClaimsBucket("script"),
  /** Drivers and hosts answer here while connected; a dead one's claimed items are handed back at once. */
  workClaimLivenessPrefix: WORK_CLAIM_LIVENESS_PREFIX,
  llmDriverDurable: "llm-driver",
  hostDurable: "capability-host",
} as const;

const N = NATS_NAMES;

/** JetStream API subjects to use a stream: info, reads (direct and msg get), and consumers. */
function streamUse(stream: string, options: { create?: boolean; update?: boolean; purge?: boolean; ephemeralConsumers?: boolean; durable?: string } = {}): string[] {
  const subjects = [
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.>`,
  ];
  // Creating is harmless (a name in use with another config is refused); updating can change
  // retention or protections, so only a stream's owner may.
  if (options.create === true) subjects.push(`$JS.API.STREAM.CREATE.${stream}`);
  if (options.update === true) subjects.push(`$JS.API.STREAM.UPDATE.${stream}`);
  if (options.purge === true) subjects.push(`$JS.API.STREAM.PURGE.${stream}`);
  if (options.ephemeralConsumers === true) {
    // Ordered consumers: created with a generated name (and a filter), read, then deleted.
    subjects.push(
      `$JS.API.CONSUMER.CREATE.${stream}`,
      `$JS.API.CONSUMER.CREATE.${stream}.>`,
      `$JS.API.CONSUMER.INFO.${stream}.>`,
      `$JS.API.CONSUMER.DELETE.${stream}.>`,
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.>`,
    );
  }
  if (options.durable !== undefined) {
    // A named durable work consumer: created or looked up, pulled from, acked, and removed to be
    // created again when it strands items its stream holds; and the stream's leader asked to step
    // down when it counts items it cannot load (work-queue.ts, the reconciler).
    const d = options.durable;
    subjects.push(
      `$JS.API.STREAM.LEADER.STEPDOWN.${stream}`,
      `$JS.API.CONSUMER.CREATE.${stream}.${d}`,
      `$JS.API.CONSUMER.CREATE.${stream}.${d}.>`,
      `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${d}`,
      `$JS.API.CONSUMER.INFO.${stream}.${d}`,
      `$JS.API.CONSUMER.DELETE.${stream}.${d}`,
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.${d}`,
      `$JS.ACK.${stream}.${d}.>`,
    );
  }
  return subjects;
}

/**
 * A KV bucket: its stream (KV_<bucket>) plus puts/deletes on `$KV.<bucket>.>`; watches and key
 * listings use ordered consumers. Opening one creates it when it is missing (nats.js asks for its
 * info first and never updates it); `update` only where the owner's code changes its config (the
 * leases' and the hosts' liveness TTLs). With STREAM.UPDATE on the key index every service's
 * user could add subjects to it (and read what they captured: other services' replies, provider
 * calls), add sources (a copy of every tenant's KV values and files), trim it (a retried append
 * committed twice) or seal it for good (no keyed append anywhere) (red-team).
 */
const kvBucket = (bucket: string, options: { update?: boolean } = {}): string[] => [...streamUse(`KV_${bucket}`, { create: true, update: options.update === true, ephemeralConsumers: true }), `$KV.${bucket}.>`];

/** An object store: its stream (OBJ_<bucket>), chunk and meta subjects; replacing an object purges its old chunks. Never reconfigured. */
const objectStore = (bucket: string): string[] => [...streamUse(`OBJ_${bucket}`, { create: true, purge: true, ephemeralConsumers: true }), `$O.${bucket}.>`];

/** Every JetStream client asks the account's API level first. */
const JS_ACCOUNT = ["$JS.API.INFO"];

/**
 * The reply subjects of one user's connections (nats.js `inboxPrefix`; `connectNats` sets it).
 * Replies carry what a request asked for: JetStream deliveries, direct gets, KV values and file
 * chunks, provider results. Granted `_INBOX.>` alike, any user (the providers' one, handed to
 * third parties, among them) could subscribe to every other's and read every tenant's events,
 * KV values and files; each user now reads only its own.
 */
export function natsInboxPrefix(user: string): string {
  return `_INBOX_${user}`;
}

/**
 * The event store: append (durable, and the live lane where the service writes it) and read.
 * Whoever starts first creates the stream; only the reducer may update its config (the store
 * turns on direct gets of a stream made by an older version).
 */
const eventStore = (options: { live: boolean; owner?: boolean }): string[] => [
  ...streamUse(N.eventStream, { create: true, update: options.owner === true, ephemeralConsumers: true }),
  // Keyed appends reserve their key in the key index before publishing.
  ...kvBucket(N.keyIndexBucket),
  `${N.durablePrefix}.>`,
  ...(options.live ? [`${N.ephemeralPrefix}.>`] : []),
];

/** Looking up and removing the single work stream of an earlier version (work-queue.ts). */
const legacyWorkStream = [`$JS.API.STREAM.INFO.${N.legacyWorkStream}`, `$JS.API.STREAM.DELETE.${N.legacyWorkStream}`];

export const NATS_PERMISSIONS: Readonly<Record<NatsServiceUser, NatsPermissions>> = {
  // Appends API input to the event store and reads it; follows the live lane for clients. No
  // work queue, no leases, no buckets, no interrupts.
  "web-gateway": {
    publish: { allow: [...JS_ACCOUNT, ...eventStore({ live: false })] },
    subscribe: { allow: [`${natsInboxPrefix("web-gateway")}.>`, `${N.ephemeralPrefix}.>`] },
    allowResponses: false,
  },
  // Folds partitions (feed, live feed), holds partition leases, snapshots, publishes work items
  // for drivers and hosts, and asks drivers to stop on an interrupt.
  "agent-reducer": {
    publish: {
      allow: [
        ...JS_ACCOUNT,
        ...eventStore({ live: true, owner: true }),
        ...streamUse(N.llmWorkStream, { create: true }),
        ...streamUse(N.scriptWorkStream, { create: true }),
        ...legacyWorkStream,
        `${N.workSubjectPrefix}.llm.>`,
        `${N.workSubjectPrefix}.script.>`,
        // Its TTL follows the lease settings (leases.ts updates it).
        ...kvBucket(N.leasesBucket, { update: true }),
        `${N.leaseLivenessPrefix}.>`,
        ...kvBucket(N.snapshotsBucket),
        N.interruptSubject,
      ],
    },
    subscribe: { allow: [`${natsInboxPrefix("agent-reducer")}.>`, `${N.ephemeralPrefix}.>`, `${N.leaseLivenessPrefix}.>`] },
    // Answers its peers' liveness probes.
    allowResponses: true,
  },
  // Claims llm work items, appends settlements and the live lane, answers interrupts.
  "llm-driver": {
    publish: {
      allow: [
        ...JS_ACCOUNT,
        ...eventStore({ live: true }),
        ...streamUse(N.llmWorkStream, { create: true, durable: N.llmDriverDurable }),
        ...legacyWorkStream,
        // Work claims: a driver that finds another's connection gone hands its items back (its kind's bucket only).
        ...kvBucket(N.llmWorkClaimsBucket),
        `${N.workClaimLivenessPrefix}.llm.>`,
      ],
    },
    subscribe: { allow: [`${natsInboxPrefix("llm-driver")}.>`, N.interruptSubject, `${N.workClaimLivenessPrefix}.llm.>`] },
    allowResponses: true,
  },
  // Claims script work items, appends run events, keeps agents' KV and files and the provider
  // registry, answers provider registration and calls providers.
  "capability-host": {
    publish: {
      allow: [
        ...JS_ACCOUNT,
        ...eventStore({ live: false }),
        ...streamUse(N.scriptWorkStream, { create: true, durable: N.hostDurable }),
        ...legacyWorkStream,
        ...kvBucket(N.agentKvBucket),
        ...kvBucket(N.providersBucket),
        ...objectStore(N.agentFilesBucket),
        ...kvBucket(N.agentFilesIndexBucket),
        // Liveness leases and run records: a host settles another's script orphaned only once its lease expired.
        // Its TTL follows the liveness settings (host-liveness.ts updates it).
        ...kvBucket(N.hostLivenessBucket, { update: true }),
        ...kvBucket(N.scriptRunsBucket),
        // Work claims: a host that finds another's connection gone hands its items back (its kind's bucket only).
        ...kvBucket(N.scriptWorkClaimsBucket),
        `${N.workClaimLivenessPrefix}.script.>`,
        `${N.capabilitiesPrefix}.call.>`,
        // Asks the provider instance running a call whether it still lives.
        `${N.capabilitiesPrefix}.alive.>`,
      ],
    },
    subscribe: {
      allow: [
        `${natsInboxPrefix("capability-host")}.>`,
        // Each namespace on its own subject (`register.<ns>`), and the single one of earlier providers.
        `${N.capabilitiesPrefix}.register`,
        `${N.capabilitiesPrefix}.register.*`,
        `${N.capabilitiesPrefix}.revoke`,
        `${N.capabilitiesPrefix}.revoke.*`,
        `${N.workClaimLivenessPrefix}.script.>`,
      ],
    },
    allowResponses: true,
  },
  // The shared user of external capability providers (capability-sdk): registers any namespace
  // with the hosts, answers calls to any. A provider with its own user (`providerUserPermissions`)
  // is bound to its namespaces instead.
  "capability-provider": {
    publish: { allow: [`${N.capabilitiesPrefix}.register`, `${N.capabilitiesPrefix}.register.*`, `${N.capabilitiesPrefix}.revoke`, `${N.capabilitiesPrefix}.revoke.*`] },
    // Its liveness subject (`alive.<instance id>`): a static list cannot name one instance, so a
    // provider could answer another's probes — which only leaves a host waiting for its call
    // timeout, as without probes.
    subscribe: { allow: [`${natsInboxPrefix("capability-provider")}.>`, `${N.capabilitiesPrefix}.call.>`, `${N.capabilitiesPrefix}.alive.>`] },
    // Answers each call twice: the instance that took it, then the result.
    allowResponses: 2,
  },
};

export const NATS_SERVICE_USERS = Object.keys(NATS_PERMISSIONS) as NatsServiceUser[];

/**
 * A capability provider with its own NATS user, bound to the namespaces it serves: it may
 * register and revoke them (each on its own subject, which the hosts check against the body) and
 * receive their calls, and nothing of another provider's. Sharing the `capability-provider` user,
 * any provider could register a namespace another serves or take the calls meant for it, with
 * their arguments and callers.
 */
export interface ProviderUser {
  /** `provider-<name>`: lower-case letters, digits and '-' (a subject token and a Secret key). */
  readonly user: string;
  /** The namespaces it serves (`itx.<namespace>`). */
  readonly namespaces: readonly string[];
}

/** What follows `provider-` in a provider user's name: a lower-case letter or digit, then up to 40 of them or '-'. */
export const PROVIDER_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,40}$/;
const PROVIDER_USER_PATTERN = new RegExp(`^provider-${PROVIDER_NAME_PATTERN.source.slice(1)}`);
/** A namespace (capability-sdk's NAMESPACE_PATTERN, checked equal by the host's nats-names test). */
export const PROVIDER_NAMESPACE_PATTERN = /^[a-z][A-Za-z0-9]{0,62}$/;

/** The permissions of a provider's own user (`ProviderUser`). */
export function providerUserPermissions(user: string, namespaces: readonly string[]): NatsPermissions {
  const p = N.capabilitiesPrefix;
  return {
    publish: { allow: namespaces.flatMap((ns) => [`${p}.register.${ns}`, `${p}.revoke.${ns}`]) },
    // Its liveness subject (`alive.<instance id>`) is one token a static list cannot name: a
    // provider could answer another's probes, which only leaves a host waiting for its call timeout.
    subscribe: { allow: [`${natsInboxPrefix(user)}.>`, ...namespaces.map((ns) => `${p}.call.${ns}`), `${p}.alive.>`] },
    allowResponses: 2,
  };
}

/** Why a list of provider users cannot be rendered (a name, a namespace, one served twice), or null. */
export function providerUsersProblem(providers: readonly ProviderUser[]): string | null {
  const servedBy = new Map<string, string>();
  const users = new Set<string>();
  for (const [i, provider] of providers.entries()) {
    if (!PROVIDER_USER_PATTERN.test(provider.user)) return `providers[${i}].user: "${provider.user}" must be provider- then a lower-case letter or digit, then up to 40 of them or '-'`;
    if (users.has(provider.user)) return `providers[${i}].user: "${provider.user}" is listed twice`;
    users.add(provider.user);
    if (provider.namespaces.length === 0) return `providers[${i}].namespaces: ${provider.user} must serve at least one namespace`;
    for (const ns of provider.namespaces) {
      if (!PROVIDER_NAMESPACE_PATTERN.test(ns)) return `providers[${i}].namespaces: "${ns}" must be an identifier (a lower-case letter, then letters or digits; at most 63)`;
      const other = servedBy.get(ns);
      if (other !== undefined) return `providers[${i}].namespaces: "${ns}" is already served by ${other}; one namespace, one provider user`;
      servedBy.set(ns, provider.user);
    }
  }
  return null;
}

const q = (s: string): string => JSON.stringify(s);
// One item a line, no commas (nats-server takes either): the chart's template of provider users
// (`chartProviderUsersTemplate`) renders the same text line by line.
const list = (items: readonly string[], indent: string): string => `[\n${items.map((i) => `${indent}  ${q(i)}`).join("\n")}\n${indent}]`;

/** One user entry of the authorization block; `password` is a literal or a `$VARIABLE` reference. */
function renderUser(user: string, password: string, permissions: NatsPermissions, indent: string): string {
  const pw = password.startsWith("$") ? password : q(password);
  return [
    `${indent}{`,
    `${indent}  user: ${q(user)}`,
    `${indent}  password: ${pw}`,
    `${indent}  permissions: {`,
    `${indent}    publish: { allow: ${list(permissions.publish.allow, `${indent}    `)} }`,
    `${indent}    subscribe: { allow: ${list(permissions.subscribe.allow, `${indent}    `)} }`,
    ...(permissions.allowResponses === true
      ? [`${indent}    allow_responses: true`]
      : typeof permissions.allowResponses === "number"
        ? [`${indent}    allow_responses: { max: ${permissions.allowResponses} }`]
        : []),
    `${indent}  }`,
    `${indent}}`,
  ].join("\n");
}

export interface RenderAuthorizationOptions {
  /** Password per user: a literal, or `$NAME` to have nats-server read the variable NAME from its environment. */
  readonly passwords: Readonly<Record<NatsServiceUser, string>>;
  /** Capability providers with their own users, each with its password (literal or `$NAME`). */
  readonly providers?: ReadonlyArray<ProviderUser & { readonly password: string }>;
  /** Extra users with no restrictions (an operator's or a test's own connection). */
  readonly unrestricted?: ReadonlyArray<{ readonly user: string; readonly password: string }>;
}

/** The nats-server `authorization { users: [...] }` block for every service user. */
export function renderNatsAuthorization(options: RenderAuthorizationOptions): string {
  const problem = providerUsersProblem(options.providers ?? []);
  if (problem !== null) throw new Error(`NATS provider users: ${problem}`);
  const users = NATS_SERVICE_USERS.map((user) => renderUser(user, options.passwords[user], NATS_PERMISSIONS[user], "    "));
  for (const provider of options.providers ?? []) users.push(renderUser(provider.user, provider.password, providerUserPermissions(provider.user, provider.namespaces), "    "));
  for (const extra of options.unrestricted ?? []) {
    users.push(`    { user: ${q(extra.user)}, password: ${extra.password.startsWith("$") ? extra.password : q(extra.password)} }`);
  }
  return `authorization {\n  users: [\n${users.join("\n")}\n  ]\n}\n`;
}

/** The environment variable a chart-run nats-server reads a user's password from. */
export function natsPasswordEnvName(user: string): string {
  return `AGENTRT_NATS_PASSWORD_${user.toUpperCase().replace(/-/g, "_")}`;
}

/**
 * The authorization block the Helm chart ships (deploy/helm/agentrt/files/nats-authorization.conf):
 * passwords are `$AGENTRT_NATS_PASSWORD_<USER>` references that nats-server resolves from its
 * environment, which the chart fills from the users' Secret, so the file holds no secret.
 */
export function chartNatsAuthorization(providers: readonly ProviderUser[] = []): string {
  const passwords = Object.fromEntries(NATS_SERVICE_USERS.map((user) => [user, `$${natsPasswordEnvName(user)}`])) as Record<NatsServiceUser, string>;
  const rendered = renderNatsAuthorization({ passwords, providers: providers.map((p) => ({ ...p, password: `$${natsPasswordEnvName(p.user)}` })) });
  // The shared provider user between marker comments: the chart leaves it out when
  // nats.auth.sharedProviderUser is false.
  const shared = renderUser("capability-provider", passwords["capability-provider"], NATS_PERMISSIONS["capability-provider"], "    ");
  const block = rendered.replace(shared, `${CHART_SHARED_PROVIDER_BEGIN}\n${shared}\n${CHART_SHARED_PROVIDER_END}`);
  return `# Generated from packages/service-kit/src/nats-permissions.ts by
#   pnpm exec tsx packages/service-kit/scripts/nats-authorization.ts --write
# Do not edit; test/helm/nats-auth.test.ts fails when it is stale.
${providers.length > 0 ? block : block.replace("\n  ]\n}\n", `\n${CHART_PROVIDER_USERS_MARKER}\n  ]\n}\n`)}`;
}

/** The comment lines around the shared provider user in the chart's authorization file. */
export const CHART_SHARED_PROVIDER_BEGIN = "    # agentrt: the shared provider user (nats.auth.sharedProviderUser)";
export const CHART_SHARED_PROVIDER_END = "    # agentrt: end of the shared provider user";

/**
 * The line of the chart's authorization file where the template puts the users of
 * `nats.auth.providers` (a comment to nats-server, should it stay).
 */
export const CHART_PROVIDER_USERS_MARKER = "    # agentrt: the users of nats.auth.providers";

const SENTINEL_USER = "provider-SENTINELUSER";
const SENTINEL_NAMESPACE = "SENTINELNAMESPACE";

/**
 * The chart's template of provider users (templates/nats/_provider-users.tpl): for each
 * `nats.auth.providers` entry `{ name, namespaces }`, the user `provider-<name>` exactly as
 * `renderNatsAuthorization` renders it, made from `providerUserPermissions` so the lists have
 * one source. A subject naming the namespace is repeated for each namespace, in order.
 */
export function chartProviderUsersTemplate(): string {
  const user = "provider-{{ $p.name }}";
  const rendered = renderUser(SENTINEL_USER, `$${natsPasswordEnvName(SENTINEL_USER)}`, providerUserPermissions(SENTINEL_USER, [SENTINEL_NAMESPACE]), "    ");
  const lines: string[] = [];
  let inRange = false;
  for (const line of rendered.split("\n")) {
    const perNamespace = line.includes(SENTINEL_NAMESPACE);
    if (perNamespace && !inRange) lines.push("{{- range $ns := $p.namespaces }}");
    if (!perNamespace && inRange) lines.push("{{- end }}");
    inRange = perNamespace;
    lines.push(
      line
        .replace(`$${natsPasswordEnvName(SENTINEL_USER)}`, `$AGENTRT_NATS_PASSWORD_{{ printf "provider-%s" $p.name | upper | replace "-" "_" }}`)
        .replaceAll(SENTINEL_USER, user)
        .replaceAll(SENTINEL_NAMESPACE, "{{ $ns }}"),
    );
  }
  return `{{- /*
Generated from packages/service-kit/src/nats-permissions.ts by
  pnpm exec tsx packages/service-kit/scripts/nats-authorization.ts --write
Do not edit; test/helm/nats-auth.test.ts fails when it is stale. The NATS users of
nats.auth.providers, one per provider, as providerUserPermissions grants them.
*/ -}}
{{- define "agentrt.natsProviderUsers" -}}
{{- range $p := .Values.nats.auth.providers }}
${lines.join("\n")}
{{- end }}
{{- end }}
`;
}
