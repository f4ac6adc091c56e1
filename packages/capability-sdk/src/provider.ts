// The provider side: a separate process registers its namespace, methods and declarations
// with the capability hosts, heartbeats the registration, and answers calls on its subject.
// Adding a capability therefore needs no change to the host.

import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import {
  type Caller,
  type CallReply,
  callRequestSchema,
  callSubject,
  parseJson,
  REGISTER_SUBJECT,
  registerReplySchema,
  type RegisterRequest,
  REVOKE_SUBJECT,
} from "./protocol.ts";

export type CapabilityMethod = (args: readonly unknown[], caller: Caller) => Promise<unknown> | unknown;

export interface CapabilityProviderOptions {
  readonly namespace: string;
  readonly declarations: string;
  readonly methods: Readonly<Record<string, CapabilityMethod>>;
  /** Registration lease (default 15 s); heartbeats every third of it. */
  readonly ttlMs?: number;
  /** How long `start` keeps trying to reach a host (default 10 s). */
  readonly registerTimeoutMs?: number;
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
  const instanceId = `${options.namespace}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const registration: RegisterRequest = {
    namespace: options.namespace,
    instanceId,
    methods: Object.keys(options.methods),
    declarations: options.declarations,
    ttlMs,
  };
  const subscription = serveCalls(nc, options);
  await registerUntil(nc, registration, Date.now() + (options.registerTimeoutMs ?? 10_000));
  const heartbeat = setInterval(() => {
    register(nc, registration).catch((error: unknown) => options.onError?.(error));
  }, Math.floor(ttlMs / 3));
  return {
    instanceId,
    async stop() {
      clearInterval(heartbeat);
      await nc
        .request(REVOKE_SUBJECT, JSON.stringify({ namespace: options.namespace, instanceId }), { timeout: 2_000 })
        .catch((error: unknown) => options.onError?.(error));
      subscription.unsubscribe();
    },
  };
}

function serveCalls(nc: NatsConnection, options: CapabilityProviderOptions): Subscription {
  return nc.subscribe(callSubject(options.namespace), {
    queue: `provider.${options.namespace}`,
    callback: (error, msg) => {
      if (error !== null) return options.onError?.(error);
      const reply = (body: CallReply): void => void msg.respond(JSON.stringify(body));
      const parsed = parseJson(callRequestSchema, msg.string());
      if (!parsed.ok) return reply({ ok: false, error: `bad call request: ${parsed.error}` });
      const { method, args, caller } = parsed.value;
      const fn = Object.hasOwn(options.methods, method) ? options.methods[method] : undefined;
      if (fn === undefined) return reply({ ok: false, error: `itx.${options.namespace} has no method "${method}"` });
      Promise.resolve()
        .then(() => fn(args, caller))
        .then(
          (result) => reply(result === undefined ? { ok: true } : { ok: true, result }),
          (e: unknown) => reply({ ok: false, error: e instanceof Error ? e.message : String(e) }),
        );
    },
  });
}

async function register(nc: NatsConnection, registration: RegisterRequest): Promise<void> {
  const msg = await nc.request(REGISTER_SUBJECT, JSON.stringify(registration), { timeout: 3_000 });
  const parsed = parseJson(registerReplySchema, msg.string());
  if (!parsed.ok) throw new ProviderRegistrationError(`bad reply from the host: ${parsed.error}`);
  if (!parsed.value.ok) throw new ProviderRegistrationError(`the host refused "${registration.namespace}": ${parsed.value.error}`);
}

async function registerUntil(nc: NatsConnection, registration: RegisterRequest, deadline: number): Promise<void> {
  for (;;) {
    try {
      return await register(nc, registration);
    } catch (error) {
      if (error instanceof ProviderRegistrationError || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200)); // no host yet: try again shortly
    }
  }
}
