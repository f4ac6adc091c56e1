// The interrupt protocol, in one place: the reducer asks on `agentrt.llm.interrupt` with
// `{streamPath, requestOffset}`; the driver running that request aborts the model call and
// replies `{partialText}`. Drivers not running it stay silent, so the requester hears only the
// owner. A request that breaks the schema is refused with `{error: {code, message}}` by every
// driver (it can never be anyone's), so the sender hears why at once instead of timing out.
// Both ends parse with the schemas below: the sender before it sends and when the reply
// arrives, the driver when the request arrives.

import type { Msg, NatsConnection, Subscription } from "@nats-io/nats-core";
import { z } from "zod";
import { ContractViolationError, streamPathProblem, type ValidationIssue } from "@agentrt/contract";
import type { Logger } from "pino";

export const INTERRUPT_SUBJECT = "agentrt.llm.interrupt";

export const interruptRequestSchema = z.strictObject({
  streamPath: z.string().superRefine((path, ctx) => {
    const problem = streamPathProblem(path);
    if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
  }),
  requestOffset: z.number().int().positive(),
});

export const interruptReplySchema = z.union([
  z.strictObject({ partialText: z.string() }),
  z.strictObject({ error: z.strictObject({ code: z.string().min(1), message: z.string() }) }),
]);

export type InterruptRequest = z.infer<typeof interruptRequestSchema>;
export type InterruptReply = z.infer<typeof interruptReplySchema>;

/** Parses an interrupt request; a malformed one is an `invalid_interrupt` naming each field. */
export function parseInterruptRequest(value: unknown): InterruptRequest {
  return parseWith(interruptRequestSchema, value, "interrupt request");
}

/** Parses a driver's reply; a malformed one is an `invalid_interrupt` naming each field. */
export function parseInterruptReply(value: unknown): InterruptReply {
  return parseWith(interruptReplySchema, value, "interrupt reply");
}

/** A driver refused the interrupt (the request broke the protocol). */
export class InterruptRefusedError extends ContractViolationError {
  constructor(code: string, message: string) {
    super("invalid_interrupt", `The interrupt was refused (${code}): ${message}`, [], { refusedWith: code });
  }
}

/**
 * Asks the driver running the request to abort it. Resolves to its partial text (undefined
 * when empty), or to undefined when no driver answers within `timeoutMs` (none is running it).
 * Throws before sending when the request is malformed, and when a driver refuses it or
 * answers with something that is not a reply.
 */
export async function requestInterrupt(
  nc: NatsConnection,
  request: InterruptRequest,
  options: { timeoutMs: number },
): Promise<string | undefined> {
  const checked = parseInterruptRequest(request);
  let msg: Msg;
  try {
    msg = await nc.request(INTERRUPT_SUBJECT, JSON.stringify(checked), { timeout: options.timeoutMs });
  } catch {
    // No responders, or none in time: nobody is running it.
    return undefined;
  }
  const reply = parseInterruptReply(decodeJson(msg.string(), "interrupt reply"));
  if ("error" in reply) throw new InterruptRefusedError(reply.error.code, reply.error.message);
  return reply.partialText.length > 0 ? reply.partialText : undefined;
}

/**
 * Serves interrupts: `handle` returns the partial text when this process runs the request
 * (after stopping it), or undefined to stay silent. Malformed requests are refused.
 */
/**
 * Whether a request reached us as a JetStream delivery (its reply subject is a stream's ack
 * subject) rather than from its sender: nats-server lets whoever may create a push consumer name
 * any deliver subject without being allowed to publish there (nats-server#8274), and the
 * gateway's user relayed an interrupt that stopped another tenant's model call (red-team). The
 * same rule as capability-sdk's `relayedByJetStream`, which service-kit does not depend on.
 */
export function relayedByJetStream(reply: string | undefined): boolean {
  return reply !== undefined && reply.startsWith("$JS.");
}

export function serveInterrupts(
  nc: NatsConnection,
  handle: (request: InterruptRequest) => { partialText: string } | undefined,
  logger: Logger,
): Subscription {
  return nc.subscribe(INTERRUPT_SUBJECT, {
    callback: (error, msg) => {
      if (error) {
        logger.warn({ err: error }, "interrupt subscription error");
        return;
      }
      // Relayed through a JetStream consumer by someone who may not publish interrupts: not the reducer's.
      if (relayedByJetStream(msg.reply)) {
        logger.warn({ reply: msg.reply }, "dropped an interrupt relayed through a JetStream consumer, not sent by a reducer");
        return;
      }
      let request: InterruptRequest;
      try {
        request = parseInterruptRequest(decodeJson(msg.string(), "interrupt request"));
      } catch (problem) {
        const refused = problem instanceof ContractViolationError ? problem : new ContractViolationError("invalid_interrupt", String(problem));
        logger.warn({ err: refused }, "refused a malformed interrupt");
        msg.respond(JSON.stringify({ error: { code: refused.code, message: refused.message } } satisfies InterruptReply));
        return;
      }
      const answer = handle(request);
      if (answer !== undefined) msg.respond(JSON.stringify(answer satisfies InterruptReply));
    },
  });
}

function parseWith<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues: ValidationIssue[] = parsed.error.issues.map((issue) => ({ path: issue.path.join(".") || "(root)", message: issue.message }));
  const summary = issues.map((i) => `${i.path}: ${i.message}`).join("; ");
  throw new ContractViolationError("invalid_interrupt", `Invalid ${what}: ${summary}.`, issues);
}

function decodeJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ContractViolationError("invalid_interrupt", `Invalid ${what}: the body is not JSON.`, [{ path: "(root)", message: "not JSON" }], { cause: String(error) });
  }
}
