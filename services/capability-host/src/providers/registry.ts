// The registry of capability providers. Providers register over request/reply
// (@agentrt/capability-sdk protocol); one host of the queue group validates the registration
// and records it in the KV bucket CAPABILITY_PROVIDERS (key = namespace). Every host watches
// the bucket, so all replicas see the same providers; the bucket's history IS the record of
// provided (put) and revoked (delete) capabilities. A registration is a lease: an entry whose
// `expiresAtMs` passed is treated as gone even before anyone deletes it.

import {
  type CallReply,
  callReplySchema,
  callSubject,
  type Caller,
  parseJson,
  REGISTER_SUBJECT,
  type RegisterReply,
  registerRequestSchema,
  REVOKE_SUBJECT,
  revokeRequestSchema,
} from "@agentrt/capability-sdk";
import type { KV } from "@nats-io/kv";
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import type { Logger } from "pino";
import { z } from "zod";
import { parseJsonOrUndefined, untilNatsAnswers } from "@agentrt/service-kit";

export const PROVIDERS_BUCKET = "CAPABILITY_PROVIDERS";

const entrySchema = z.strictObject({
  namespace: z.string(),
  instanceId: z.string(),
  methods: z.array(z.string()),
  declarations: z.string(),
  ttlMs: z.number(),
  expiresAtMs: z.number(),
  registeredAt: z.string(),
});
export type ProviderEntry = z.infer<typeof entrySchema>;

/** A script-visible failure of a provider call; its message names the namespace. */
export class ProviderCallError extends Error {
  override readonly name = "ProviderCallError";
  constructor(
    readonly code: "provider_unavailable" | "provider_gone" | "provider_failed",
    message: string,
  ) {
    super(message);
  }
}

export class ProviderRegistry {
  private readonly entries = new Map<string, ProviderEntry>();
  private readonly subscriptions: Subscription[] = [];
  private stopWatch: (() => void) | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly kv: KV,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  async start(): Promise<void> {
    const watch = await untilNatsAnswers("providers watch", () => this.kv.watch({ key: ">" }), { logger: this.logger });
    this.stopWatch = () => watch.stop();
    void (async () => {
      for await (const entry of watch) {
        if (entry.operation !== "PUT") {
          this.entries.delete(entry.key);
          continue;
        }
        const parsed = entrySchema.safeParse(parseJsonOrUndefined(entry.string()));
        if (parsed.success) this.entries.set(entry.key, parsed.data);
      }
    })();
    const queue = "capability-host";
    this.subscriptions.push(
      this.nc.subscribe(REGISTER_SUBJECT, { queue, callback: (_e, msg) => void this.answer(() => this.onRegister(msg.string())).then((r) => msg.respond(JSON.stringify(r))) }),
      this.nc.subscribe(REVOKE_SUBJECT, { queue, callback: (_e, msg) => void this.answer(() => this.onRevoke(msg.string())).then((r) => msg.respond(JSON.stringify(r))) }),
    );
  }

  stop(): void {
    for (const s of this.subscriptions) s.unsubscribe();
    this.stopWatch?.();
  }

  /** Live providers (lease not lapsed), by namespace. */
  live(): ProviderEntry[] {
    const now = this.now();
    return [...this.entries.values()].filter((e) => e.expiresAtMs > now).sort((a, b) => a.namespace.localeCompare(b.namespace));
  }

  async call(namespace: string, method: string, args: unknown[], caller: Caller, timeoutMs: number): Promise<unknown> {
    const entry = this.entries.get(namespace);
    if (entry === undefined) {
      throw new ProviderCallError("provider_unavailable", `itx.${namespace} is not available: no capability provider registered the namespace "${namespace}".`);
    }
    if (entry.expiresAtMs <= this.now()) {
      throw new ProviderCallError("provider_gone", `The capability provider for itx.${namespace} is gone (its registration lapsed); itx.${namespace}.${method} was not called.`);
    }
    let reply: CallReply;
    try {
      const msg = await this.nc.request(callSubject(namespace), JSON.stringify({ method, args, caller }), { timeout: timeoutMs });
      const parsed = parseJson(callReplySchema, msg.string());
      if (!parsed.ok) throw new ProviderCallError("provider_failed", `The capability provider for itx.${namespace} sent a bad reply: ${parsed.error}`);
      reply = parsed.value;
    } catch (error) {
      if (error instanceof ProviderCallError) throw error;
      throw new ProviderCallError("provider_gone", `The capability provider for itx.${namespace} is gone: itx.${namespace}.${method} got no answer (${error instanceof Error ? error.message : String(error)}).`);
    }
    if (!reply.ok) throw new ProviderCallError("provider_failed", `itx.${namespace}.${method} failed: ${reply.error}`);
    return reply.result;
  }

  /** Every request gets an answer: an internal failure is reported, not left to time out. */
  private async answer(fn: () => Promise<RegisterReply>): Promise<RegisterReply> {
    try {
      return await fn();
    } catch (error) {
      this.logger.error({ err: error }, "provider registration failed");
      return { ok: false, error: `the host could not record the registration: ${error instanceof Error ? error.message : String(error)}` };
    }
  }

  private async onRegister(body: string): Promise<RegisterReply> {
    const parsed = parseJson(registerRequestSchema, body);
    if (!parsed.ok) return { ok: false, error: parsed.error };
    const request = parsed.value;
    const syntax = await declarationSyntaxError(request.namespace, request.declarations);
    if (syntax !== null) return { ok: false, error: `declarations: ${syntax}` };
    const previous = this.entries.get(request.namespace);
    const entry: ProviderEntry = {
      ...request,
      expiresAtMs: this.now() + request.ttlMs,
      registeredAt: previous?.instanceId === request.instanceId ? previous.registeredAt : new Date(this.now()).toISOString(),
    };
    this.entries.set(request.namespace, entry);
    await this.kv.put(request.namespace, JSON.stringify(entry));
    if (previous?.instanceId !== request.instanceId) {
      this.logger.info({ namespace: request.namespace, instanceId: request.instanceId, methods: request.methods }, "capability provided");
    }
    return { ok: true };
  }

  private async onRevoke(body: string): Promise<RegisterReply> {
    const parsed = parseJson(revokeRequestSchema, body);
    if (!parsed.ok) return { ok: false, error: parsed.error };
    const current = this.entries.get(parsed.value.namespace);
    if (current?.instanceId === parsed.value.instanceId) {
      this.entries.delete(parsed.value.namespace);
      await this.kv.delete(parsed.value.namespace);
      this.logger.info({ namespace: parsed.value.namespace, instanceId: parsed.value.instanceId }, "capability revoked");
    }
    return { ok: true };
  }
}

/**
 * The compiler is loaded on the first registration, not at start-up: the host's thread never
 * needs it otherwise (checks run in worker threads), and loading it is most of a cold start.
 */
async function declarationSyntaxError(namespace: string, declarations: string): Promise<string | null> {
  const { default: ts } = await import("typescript");
  const out = ts.transpileModule(declarations, { fileName: `${namespace}-declarations.ts`, reportDiagnostics: true });
  const first = out.diagnostics?.find((d) => d.category === ts.DiagnosticCategory.Error);
  return first === undefined ? null : ts.flattenDiagnosticMessageText(first.messageText, "\n");
}
