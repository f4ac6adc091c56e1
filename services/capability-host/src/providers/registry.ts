// The registry of capability providers. Providers register over request/reply
// (@agentrt/capability-sdk protocol); one host of the queue group validates the registration
// and records it in the KV bucket CAPABILITY_PROVIDERS (key = namespace). Every host watches
// the bucket, so all replicas see the same providers; the bucket's history IS the record of
// provided (put) and revoked (delete) capabilities. A registration is a lease: an entry whose
// `expiresAtMs` passed is treated as gone even before anyone deletes it.

import {
  aliveSubject,
  bodyRoom,
  CALL_ACCEPTED_HEADER,
  callAcceptedSchema,
  type CallReply,
  callReplySchema,
  callSubject,
  type Caller,
  parseJson,
  REGISTER_SUBJECT,
  type RegisterReply,
  type RegisterRequest,
  registerRequestSchema,
  registerSubject,
  relayedByJetStream,
  REVOKE_SUBJECT,
  revokeRequestSchema,
  revokeSubject,
} from "@agentrt/capability-sdk";
import type { KV } from "@nats-io/kv";
import { newInbox } from "@agentrt/streams/jetstream";
import { errors, headers, type NatsConnection, type Subscription } from "@nats-io/nats-core";
import type { Logger } from "pino";
import { z } from "zod";
import { parseJsonOrUndefined, untilNatsAnswers } from "@agentrt/service-kit";

export const PROVIDERS_BUCKET = "CAPABILITY_PROVIDERS";

/** How often a host asks the provider instance running a call whether it still lives. */
export const PROVIDER_PROBE_EVERY_MS = 500;
/** Live provider namespaces a host takes at once (built-ins aside). */
export const MAX_PROVIDER_NAMESPACES = 64;
/** Characters of declarations all live providers may have together: every script's typecheck reads them. */
export const MAX_PROVIDER_DECLARATIONS = 512 * 1024;
/**
 * Characters of changed declarations a host checks per second, at most (their syntax is read on
 * the host's main thread), after a burst of MAX_PROVIDER_DECLARATIONS (every provider registering
 * at once). A renewal with the declarations already accepted is not checked again; past this, a
 * registration is refused as retryable. 8 renewals of 200 KB each, with the check an emit as well
 * as a parse, had held the host's event loop 19 s (red-team).
 */
export const DECLARATION_CHECK_CHARS_PER_SECOND = 128 * 1024;
/** A registration whose lease lapsed this long ago is removed from the bucket (and every host's memory). */
export const LAPSED_REGISTRATION_KEPT_MS = 60_000;
/** A call's headers fit in this much of a message beside its body. */
const CALL_HEADERS_ROOM = 1024;
/** "No responders" this many times in a row (not a reconnect's moment) means the instance is gone. */
const GONE_AFTER_PROBES = 3;

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
    readonly code: "provider_unavailable" | "provider_gone" | "provider_failed" | "call_too_large",
    message: string,
  ) {
    super(message);
  }
}

export class ProviderRegistry {
  private readonly entries = new Map<string, ProviderEntry>();
  /** Each entry's revision in the bucket: a lapsed one is removed only if nobody renewed it since. */
  private readonly revisions = new Map<string, number>();
  /** The characters of declarations this host may still check now (refilled per second). */
  private checkBudget = MAX_PROVIDER_DECLARATIONS;
  private checkBudgetAt = 0;
  private readonly subscriptions: Subscription[] = [];
  private stopWatch: (() => void) | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly kv: KV,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    /** How often the instance running a call is asked whether it still lives. */
    private readonly probeEveryMs = PROVIDER_PROBE_EVERY_MS,
    /** How long a lapsed registration is kept before it is removed. */
    private readonly lapsedKeptMs = LAPSED_REGISTRATION_KEPT_MS,
  ) {}

  async start(): Promise<void> {
    const watch = await untilNatsAnswers("providers watch", () => this.kv.watch({ key: ">" }), { logger: this.logger });
    this.stopWatch = () => watch.stop();
    void (async () => {
      for await (const entry of watch) {
        if (entry.operation !== "PUT") {
          this.entries.delete(entry.key);
          this.revisions.delete(entry.key);
          continue;
        }
        const parsed = entrySchema.safeParse(parseJsonOrUndefined(entry.string()));
        if (parsed.success) {
          this.entries.set(entry.key, parsed.data);
          this.revisions.set(entry.key, entry.revision);
        }
      }
    })();
    // Each namespace on its own subject (`register.<ns>`), which NATS permissions can bind to a
    // provider's user; and the single subject of earlier providers.
    const serve = (subject: string, handle: (body: string, subjectNamespace: string | undefined) => Promise<RegisterReply>): Subscription =>
      this.nc.subscribe(subject, {
        queue: "capability-host",
        callback: (error, msg) => {
          // A refused subscription (a NATS still on an earlier version's permission lists) calls
          // back with an error and no message; reading that one would throw inside the client's
          // reader and stop the host's connection for good.
          if (error !== null) {
            this.logger.error({ err: error, subject }, "capability host may not subscribe here: load the current NATS permissions (files/nats-authorization.conf); providers registering on it get no answer");
            return;
          }
          // Relayed through a JetStream consumer by someone who may not publish here: not a provider's.
          if (relayedByJetStream(msg.reply)) {
            this.logger.warn({ subject: msg.subject, reply: msg.reply }, "dropped a registration relayed through a JetStream consumer, not sent by a provider");
            return;
          }
          const subjectNamespace = subject.endsWith(".*") ? msg.subject.slice(msg.subject.lastIndexOf(".") + 1) : undefined;
          void this.answer(() => handle(msg.string(), subjectNamespace)).then((r) => msg.respond(JSON.stringify(r)));
        },
      });
    this.subscriptions.push(
      serve(REGISTER_SUBJECT, (body, ns) => this.onRegister(body, ns)),
      serve(registerSubject("*"), (body, ns) => this.onRegister(body, ns)),
      serve(REVOKE_SUBJECT, (body, ns) => this.onRevoke(body, ns)),
      serve(revokeSubject("*"), (body, ns) => this.onRevoke(body, ns)),
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
    const body = new TextEncoder().encode(JSON.stringify({ method, args, caller }));
    // Past the server's message limit the client refuses to publish; that must not read as a dead provider.
    const room = bodyRoom(this.nc, CALL_HEADERS_ROOM);
    if (room !== undefined && body.length > room) {
      throw new ProviderCallError(
        "call_too_large",
        `itx.${namespace}.${method} was not called: its arguments are ${body.length} bytes as JSON, past the ${room} bytes ` +
          `one NATS message carries to a provider (the server's max_payload, less room for headers). Pass less per call.`,
      );
    }
    const reply = await this.awaitReply(namespace, method, body, timeoutMs);
    if (!reply.ok) throw new ProviderCallError("provider_failed", `itx.${namespace}.${method} failed: ${reply.error}`);
    return reply.result;
  }

  /**
   * Sends a call and waits for its result. The provider first answers with the instance that took
   * the call; from then on that instance is asked every `probeEveryMs` whether it still lives, and
   * "no responders" there (its process is gone) fails the call at once: a provider killed
   * mid-call used to hold the script, and a host slot, for the whole call timeout (three "no
   * responders" in a row are needed, so a connection moving between NATS nodes is not taken
   * for a death). An unanswered
   * probe (a provider that is only slow or frozen, or NATS not answering) counts as alive, so only
   * the timeout bounds those. Nobody subscribed to the call at all fails at once too.
   */
  private awaitReply(namespace: string, method: string, body: Uint8Array, timeoutMs: number): Promise<CallReply> {
    return new Promise<CallReply>((resolve, reject) => {
      const inbox = newInbox(this.nc);
      let probing: ReturnType<typeof setInterval> | undefined;
      let settled = false;
      const finish = (outcome: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearInterval(probing);
        subscription.unsubscribe();
        outcome();
      };
      const gone = (why: string): void =>
        finish(() => reject(new ProviderCallError("provider_gone", `The capability provider for itx.${namespace} is gone: itx.${namespace}.${method} got no answer (${why}).`)));
      const timer = setTimeout(() => gone(`no result within ${timeoutMs} ms`), timeoutMs);
      const subscription = this.nc.subscribe(inbox, {
        callback: (error, msg) => {
          if (error !== null) return gone(error.message);
          // The server's own answer when nobody subscribes to the call subject.
          if (msg.data.length === 0 && msg.headers?.code === 503) return gone("no responders");
          const text = msg.string();
          const accepted = callAcceptedSchema.safeParse(parseJsonOrUndefined(text));
          if (accepted.success) {
            const instance = accepted.data.accepted;
            let unanswered = 0;
            clearInterval(probing);
            probing = setInterval(() => {
              void this.isGone(instance).then((dead) => {
                // Several in a row: a provider whose connection is moving to another NATS node
                // has no subscription for a moment, and its result is still coming.
                unanswered = dead ? unanswered + 1 : 0;
                if (unanswered >= GONE_AFTER_PROBES) gone(`its process ${instance} stopped while the call ran`);
              });
            }, this.probeEveryMs);
            return;
          }
          const parsed = parseJson(callReplySchema, text);
          if (!parsed.ok) {
            return finish(() => reject(new ProviderCallError("provider_failed", `The capability provider for itx.${namespace} sent a bad reply: ${parsed.error}`)));
          }
          finish(() => resolve(parsed.value));
        },
      });
      try {
        const h = headers();
        h.set(CALL_ACCEPTED_HEADER, "1");
        this.nc.publish(callSubject(namespace), body, { reply: inbox, headers: h });
      } catch (error) {
        gone(error instanceof Error ? error.message : String(error));
      }
    });
  }

  /** True only when nobody answers on the instance's liveness subject: its process is gone. */
  private async isGone(instanceId: string): Promise<boolean> {
    try {
      await this.nc.request(aliveSubject(instanceId), undefined, { timeout: Math.max(250, this.probeEveryMs * 2) });
      return false;
    } catch (error) {
      return error instanceof errors.NoRespondersError || (error instanceof errors.RequestError && error.cause instanceof errors.NoRespondersError);
    }
  }

  /** Every request gets an answer: an internal failure is reported, not left to time out. */
  private async answer(fn: () => Promise<RegisterReply>): Promise<RegisterReply> {
    try {
      return await fn();
    } catch (error) {
      this.logger.error({ err: error }, "provider registration failed");
      // Not a refusal: the provider tries again (a refusal is answered without throwing).
      return { ok: false, error: `the host could not record the registration: ${error instanceof Error ? error.message : String(error)}`, retryable: true };
    }
  }

  /**
   * @param subjectNamespace the namespace of the subject it came on (`register.<ns>`), undefined
   *   on the single shared subject.
   */
  private async onRegister(body: string, subjectNamespace: string | undefined): Promise<RegisterReply> {
    const parsed = parseJson(registerRequestSchema, body);
    if (!parsed.ok) return { ok: false, error: parsed.error };
    const request = parsed.value;
    const elsewhere = namespaceMismatch(request.namespace, subjectNamespace, registerSubject);
    if (elsewhere !== null) {
      this.logger.warn({ namespace: request.namespace, subjectNamespace, instanceId: request.instanceId }, "capability registration refused: sent on another namespace's subject");
      return { ok: false, error: elsewhere };
    }
    await this.removeLapsed();
    const refused = this.overLimits(request);
    if (refused !== null) {
      this.logger.warn({ namespace: request.namespace, instanceId: request.instanceId, reason: refused }, "capability registration refused");
      return { ok: false, error: refused };
    }
    const previous = this.entries.get(request.namespace);
    // A renewal of what was accepted is not read again; changed declarations are, within a budget.
    if (previous?.declarations !== request.declarations) {
      if (!this.takeCheckBudget(request.declarations.length)) {
        return {
          ok: false,
          error: `declarations: this host checks at most ${DECLARATION_CHECK_CHARS_PER_SECOND} characters of changed declarations a second, and registrations arrive faster; try again shortly`,
          retryable: true,
        };
      }
      const syntax = await declarationSyntaxError(request.namespace, request.declarations);
      if (syntax !== null) return { ok: false, error: `declarations: ${syntax}` };
    }
    const entry: ProviderEntry = {
      ...request,
      expiresAtMs: this.now() + request.ttlMs,
      registeredAt: previous?.instanceId === request.instanceId ? previous.registeredAt : new Date(this.now()).toISOString(),
    };
    this.entries.set(request.namespace, entry);
    this.revisions.set(request.namespace, await this.kv.put(request.namespace, JSON.stringify(entry)));
    if (previous?.instanceId !== request.instanceId) {
      this.logger.info({ namespace: request.namespace, instanceId: request.instanceId, methods: request.methods }, "capability provided");
    }
    return { ok: true };
  }

  /** Takes `chars` from the per-second budget of declaration checks; false when it has not that much left. */
  private takeCheckBudget(chars: number): boolean {
    const now = this.now();
    this.checkBudget = Math.min(MAX_PROVIDER_DECLARATIONS, this.checkBudget + ((now - this.checkBudgetAt) / 1000) * DECLARATION_CHECK_CHARS_PER_SECOND);
    this.checkBudgetAt = now;
    if (chars > this.checkBudget) return false;
    this.checkBudget -= chars;
    return true;
  }

  /**
   * Removes registrations whose lease lapsed more than `lapsedKeptMs` ago, unless
   * renewed since (compare-and-set on the revision seen). They counted for nothing, but stayed in
   * every host's memory and in the bucket's history: fresh namespaces registered with short
   * leases, 200 KB each, grew both without end (red-team).
   */
  private async removeLapsed(): Promise<void> {
    const before = this.now() - this.lapsedKeptMs;
    for (const [namespace, entry] of this.entries) {
      const revision = this.revisions.get(namespace);
      if (entry.expiresAtMs > before || revision === undefined) continue;
      this.entries.delete(namespace);
      this.revisions.delete(namespace);
      await this.kv.purge(namespace, { previousSeq: revision }).catch(() => undefined);
    }
  }

  /**
   * Every live provider's declarations go into every script's typecheck, and a registration is
   * kept for up to 10 minutes: without a bound, one provider user registered 100 namespaces of
   * 195 KB each and every script on the host failed its typecheck (the checkers ran out of
   * memory). A renewal replaces its own namespace, so it is counted once.
   */
  private overLimits(request: RegisterRequest): string | null {
    const others = this.live().filter((e) => e.namespace !== request.namespace);
    if (others.length + 1 > MAX_PROVIDER_NAMESPACES) {
      return `too many capability providers: ${others.length} namespaces are registered and at most ${MAX_PROVIDER_NAMESPACES} may be; "${request.namespace}" was not registered`;
    }
    const bytes = others.reduce((sum, e) => sum + e.declarations.length, 0) + request.declarations.length;
    if (bytes > MAX_PROVIDER_DECLARATIONS) {
      return (
        `declarations: the registered providers' declarations would be ${bytes} characters, past the ${MAX_PROVIDER_DECLARATIONS} every script's typecheck ` +
        `takes in all; "${request.namespace}" was not registered`
      );
    }
    return null;
  }

  private async onRevoke(body: string, subjectNamespace: string | undefined): Promise<RegisterReply> {
    const parsed = parseJson(revokeRequestSchema, body);
    if (!parsed.ok) return { ok: false, error: parsed.error };
    const elsewhere = namespaceMismatch(parsed.value.namespace, subjectNamespace, revokeSubject);
    if (elsewhere !== null) return { ok: false, error: elsewhere };
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
 * A namespace's own subject is what NATS permissions bind to a provider's user: a body naming
 * another namespace than its subject would let that user register or revoke a namespace it was
 * not granted.
 */
function namespaceMismatch(namespace: string, subjectNamespace: string | undefined, subjectOf: (ns: string) => string): string | null {
  if (subjectNamespace === undefined || subjectNamespace === namespace) return null;
  return `namespace: "${namespace}" was sent on ${subjectOf(subjectNamespace)}, the subject of "${subjectNamespace}"; a namespace is registered and revoked only on its own subject (${subjectOf(namespace)})`;
}

/**
 * The compiler is loaded on the first registration, not at start-up: the host's thread never
 * needs it otherwise (checks run in worker threads), and loading it is most of a cold start.
 */
async function declarationSyntaxError(namespace: string, declarations: string): Promise<string | null> {
  const { default: ts } = await import("typescript");
  // A parse gives the syntax errors; a transpile also emitted JavaScript, 15 times the cost.
  const file = ts.createSourceFile(`${namespace}-declarations.ts`, declarations, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const first = (file as unknown as { parseDiagnostics?: readonly import("typescript").Diagnostic[] }).parseDiagnostics?.[0];
  return first === undefined ? null : ts.flattenDiagnosticMessageText(first.messageText, "\n");
}
