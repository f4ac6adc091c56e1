// The provider side: a separate process registers its namespace, methods and declarations
// with the capability hosts, heartbeats the registration, and answers calls on its subject.
// Adding a capability therefore needs no change to the host.
//
// Start order does not matter: with no host yet (or a host that is restarting) registration is
// retried with capped, jittered backoff, each retry logged with its reason, for as long as the
// provider runs. Only a host's explicit refusal (bad declarations, a reserved namespace) stops
// `startCapabilityProvider`, because retrying cannot fix it.

import { errors, type Msg, type NatsConnection, type Subscription } from "@nats-io/nats-core";
import { backoffDelayMs, type BackoffPolicy, DEFAULT_BACKOFF } from "./backoff.ts";
import {
  aliveSubject,
  bodyRoom,
  CALL_ACCEPTED_HEADER,
  type CallAccepted,
  type Caller,
  type CallReply,
  callRequestSchema,
  callSubject,
  parseJson,
  REGISTER_SUBJECT,
  registerReplySchema,
  type RegisterRequest,
  registerSubject,
  relayedByJetStream,
  REVOKE_SUBJECT,
  revokeSubject,
} from "./protocol.ts";

export type CapabilityMethod = (args: readonly unknown[], caller: Caller) => Promise<unknown> | unknown;

/** Structured logging (pino's `(object, message)` shape, so a pino logger fits). */
export interface ProviderLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface CapabilityProviderOptions {
  readonly namespace: string;
  readonly declarations: string;
  readonly methods: Readonly<Record<string, CapabilityMethod>>;
  /** Registration lease (default 15 s); heartbeats every third of it. */
  readonly ttlMs?: number;
  /** Give up the FIRST registration after this long (default: never; keep retrying). */
  readonly registerTimeoutMs?: number;
  /** Delays between registration attempts (default 200 ms doubling to at most 5 s, jittered). */
  readonly retry?: BackoffPolicy;
  /** Where retries and re-registrations are logged (default: JSON lines on stderr). */
  readonly log?: ProviderLog;
  /** Aborting stops a start that is still waiting for a host. */
  readonly signal?: AbortSignal;
  readonly onError?: (error: unknown) => void;
}

export class ProviderRegistrationError extends Error {
  override readonly name = "ProviderRegistrationError";
  readonly code = "provider_registration_failed";
}

export interface RunningProvider {
  readonly instanceId: string;
  /** Revokes the registration and stops answering calls. */
  stop(): Promise<void>;
}

export async function startCapabilityProvider(nc: NatsConnection, options: CapabilityProviderOptions): Promise<RunningProvider> {
  const ttlMs = options.ttlMs ?? 15_000;
  const log = options.log ?? stderrLog(options.namespace);
  const instanceId = `${options.namespace}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const registration: RegisterRequest = {
    namespace: options.namespace,
    instanceId,
    methods: Object.keys(options.methods),
    declarations: options.declarations,
    ttlMs,
  };
  const stopped = new AbortController();
  const subscription = serveCalls(nc, options, instanceId);
  // Answers while this process lives: a host waiting on one of our calls asks here, and "no
  // responders" (the process is gone) fails the call at once instead of after its timeout.
  // (A refused subscription calls back with an error and no message: answering that would throw
  // inside the client's reader and stop the connection for good.)
  const alive = nc.subscribe(aliveSubject(instanceId), { callback: (error, msg) => void (error === null ? msg.respond() : options.onError?.(error)) });
  const keeper = new RegistrationKeeper(nc, registration, options.retry ?? DEFAULT_BACKOFF, log, stopped.signal);
  const deadline = options.registerTimeoutMs === undefined ? Infinity : Date.now() + options.registerTimeoutMs;
  try {
    await keeper.registerFirst(deadline, options.signal);
  } catch (error) {
    stopped.abort();
    subscription.unsubscribe();
    alive.unsubscribe();
    throw error;
  }
  void keeper.keepAlive(Math.floor(ttlMs / 3));
  return {
    instanceId,
    async stop() {
      stopped.abort();
      await requestOnNamespace(nc, revokeSubject(options.namespace), REVOKE_SUBJECT, JSON.stringify({ namespace: options.namespace, instanceId }), 2_000).catch(
        (error: unknown) => options.onError?.(error),
      );
      subscription.unsubscribe();
      alive.unsubscribe();
    },
  };
}

/** Registers, then heartbeats; after a failed heartbeat it retries with backoff until a host answers. */
class RegistrationKeeper {
  constructor(
    private readonly nc: NatsConnection,
    private readonly registration: RegisterRequest,
    private readonly policy: BackoffPolicy,
    private readonly log: ProviderLog,
    private readonly stopped: AbortSignal,
  ) {}

  async registerFirst(deadline: number, signal: AbortSignal | undefined): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await register(this.nc, this.registration);
        if (attempt > 1) this.log.info({ namespace: this.registration.namespace, attempts: attempt }, "capability registered with a host");
        return;
      } catch (error) {
        if (error instanceof ProviderRegistrationError) throw error;
        const delayMs = backoffDelayMs(attempt, this.policy);
        if (Date.now() + delayMs > deadline) {
          throw new ProviderRegistrationError(`no capability host answered the registration of "${this.registration.namespace}" in time: ${reason(error)}`, { cause: error });
        }
        this.logRetry(attempt, delayMs, error);
        if (!(await sleep(delayMs, signal))) throw new ProviderRegistrationError(`registration of "${this.registration.namespace}" was aborted`);
      }
    }
  }

  async keepAlive(heartbeatMs: number): Promise<void> {
    let failures = 0;
    while (await sleep(failures === 0 ? heartbeatMs : backoffDelayMs(failures, this.policy), this.stopped)) {
      try {
        await register(this.nc, this.registration);
        if (failures > 0) this.log.info({ namespace: this.registration.namespace, attempts: failures + 1 }, "capability registered again");
        failures = 0;
      } catch (error) {
        if (this.stopped.aborted) return;
        failures++;
        this.logRetry(failures, backoffDelayMs(failures, this.policy), error);
      }
    }
  }

  private logRetry(attempt: number, delayMs: number, error: unknown): void {
    this.log.warn(
      { namespace: this.registration.namespace, attempt, retryInMs: delayMs, reason: reason(error) },
      "capability registration failed (no capability host answered yet?); retrying",
    );
  }
}

function serveCalls(nc: NatsConnection, options: CapabilityProviderOptions, instanceId: string): Subscription {
  return nc.subscribe(callSubject(options.namespace), {
    queue: `provider.${options.namespace}`,
    callback: (error, msg) => {
      if (error !== null) return options.onError?.(error);
      // Relayed through a JetStream consumer by someone who may not publish calls: not a host's.
      if (relayedByJetStream(msg.reply)) return options.onError?.(new Error(`dropped a call to itx.${options.namespace} relayed through a JetStream consumer (reply ${msg.reply}), not sent by a capability host`));
      // A reply that cannot be sent (the connection closing or lost) is reported, never thrown:
      // thrown from the promise chain below it would end the provider's process.
      const reply = (body: CallReply | CallAccepted): void => {
        try {
          msg.respond(fitting(nc, body, options.namespace));
        } catch (e) {
          options.onError?.(e);
        }
      };
      const parsed = parseJson(callRequestSchema, msg.string());
      if (!parsed.ok) return reply({ ok: false, error: `bad call request: ${parsed.error}` });
      const { method, args, caller } = parsed.value;
      const fn = Object.hasOwn(options.methods, method) ? options.methods[method] : undefined;
      if (fn === undefined) return reply({ ok: false, error: `itx.${options.namespace} has no method "${method}"` });
      // Which process has the call, first, when the host asks: it watches that one meanwhile.
      if (msg.headers?.get(CALL_ACCEPTED_HEADER) === "1") reply({ accepted: instanceId });
      Promise.resolve()
        .then(() => fn(args, caller))
        .then(
          (result) => reply(result === undefined ? { ok: true } : { ok: true, result }),
          (e: unknown) => reply({ ok: false, error: e instanceof Error ? e.message : String(e) }),
        );
    },
  });
}

/**
 * A reply as one NATS message. A result past the server's message limit would fail to send and
 * leave the host waiting for its call timeout, then blaming a dead provider; it is answered with
 * an error that says so instead.
 */
function fitting(nc: NatsConnection, body: CallReply | CallAccepted, namespace: string): Uint8Array {
  const bytes = new TextEncoder().encode(JSON.stringify(body));
  const room = bodyRoom(nc);
  if (room === undefined || bytes.length <= room) return bytes;
  const error = `the result of a call to itx.${namespace} is ${bytes.length} bytes as JSON, past the ${room} bytes one NATS message carries (the server's max_payload); return less per call`;
  return new TextEncoder().encode(JSON.stringify({ ok: false, error } satisfies CallReply));
}

/**
 * A request on the namespace's own subject. When nobody answers there (hosts of an earlier
 * version listen only on the single shared subject), or the user may not publish there (a NATS
 * configured with an earlier version's permission lists), the same request on the shared one.
 */
async function requestOnNamespace(nc: NatsConnection, subject: string, sharedSubject: string, body: string, timeout: number): Promise<Msg> {
  try {
    return await nc.request(subject, body, { timeout });
  } catch (error) {
    if (!notServedThere(error)) throw error;
    return await nc.request(sharedSubject, body, { timeout });
  }
}

function notServedThere(error: unknown): boolean {
  const cause = error instanceof errors.RequestError ? error.cause : error;
  return cause instanceof errors.NoRespondersError || (cause instanceof errors.PermissionViolationError && cause.operation === "publish");
}

async function register(nc: NatsConnection, registration: RegisterRequest): Promise<void> {
  const msg = await requestOnNamespace(nc, registerSubject(registration.namespace), REGISTER_SUBJECT, JSON.stringify(registration), 3_000);
  const parsed = parseJson(registerReplySchema, msg.string());
  if (!parsed.ok) throw new ProviderRegistrationError(`bad reply from the host: ${parsed.error}`);
  if (!parsed.value.ok) {
    // The host could not record it (its NATS not answering for a moment): try again, as when no
    // host answered. Only a refusal (bad declarations, a reserved namespace) is final: the chaos
    // soak saw the example provider exit on such a failure while a NATS node restarted.
    if (parsed.value.retryable === true) throw new Error(`the host could not record the registration of "${registration.namespace}": ${parsed.value.error}`);
    throw new ProviderRegistrationError(`the host refused "${registration.namespace}": ${parsed.value.error}`);
  }
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function stderrLog(namespace: string): ProviderLog {
  const write = (level: string, fields: Record<string, unknown>, msg: string) =>
    void process.stderr.write(`${JSON.stringify({ level, time: Date.now(), provider: namespace, ...fields, msg })}\n`);
  return { info: (fields, msg) => write("info", fields, msg), warn: (fields, msg) => write("warn", fields, msg) };
}
