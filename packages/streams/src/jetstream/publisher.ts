// A lean JetStream publisher for the hot path. `js.publish` builds a request per message (a
// timer, a response subscription entry, and an `Error` constructed when the request is
// cancelled after its answer arrived); at thousands of appends per second that client CPU, not
// the server, was the bottleneck. This publisher sends plain PUBs with a reply subject on ONE
// wildcard inbox subscription, matches acks by reply token, and expires unanswered publishes
// with a single sweeping timer. The store's appends, the key index's reservations and the
// reducer's work items go this way.

import { JetStreamApiCodes } from "@nats-io/jetstream";
import { type Msg, type MsgHdrs, type NatsConnection, type Subscription, createInbox, headers as newHeaders } from "@nats-io/nats-core";

export interface PublishExpectations {
  /** `Nats-Msg-Id`: a second publish with this id within the stream's duplicate window is answered "duplicate". */
  readonly msgID?: string;
  /** Stored only if the subject's last message has this sequence (0: the subject has none). */
  readonly lastSubjectSequence?: number;
  /** Reject a "duplicate" answer with PublishDuplicateError instead of resolving its sequence. */
  readonly duplicateIsError?: boolean;
  /** Headers stored with the message. */
  readonly headers?: ReadonlyArray<readonly [name: string, value: string]>;
}

/** The server refused the publish (e.g. wrong last sequence); `errCode` is JetStream's. */
export class PublishRejectedError extends Error {
  constructor(
    readonly status: number,
    readonly errCode: number,
    description: string,
  ) {
    super(`JetStream rejected the publish: ${description} (err_code ${errCode})`);
    this.name = "PublishRejectedError";
  }

  get wrongLastSequence(): boolean {
    return this.errCode === JetStreamApiCodes.StreamWrongLastSequence || this.errCode === JetStreamApiCodes.StreamWrongLastSequenceUnknown;
  }
}

/**
 * The server answered "duplicate": a message with this `Nats-Msg-Id` is already stored (or
 * still being stored; then `seq` is 0). Whose message that is, the caller must find out.
 */
export class PublishDuplicateError extends Error {
  constructor(readonly seq: number) {
    super(`JetStream already holds a message with this Nats-Msg-Id (seq ${seq})`);
    this.name = "PublishDuplicateError";
  }
}

/** No ack arrived in time (or nobody could answer): the publish may or may not have landed. */
export class PublishUnconfirmedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PublishUnconfirmedError";
  }
}

interface Pending {
  readonly resolve: (seq: number) => void;
  readonly reject: (error: Error) => void;
  readonly deadline: number;
  readonly duplicateIsError: boolean;
}

const decoder = new TextDecoder();

export class JetStreamPublisher {
  private readonly prefix = createInbox();
  private readonly pending = new Map<string, Pending>();
  private readonly subscription: Subscription;
  private readonly sweeper: NodeJS.Timeout;
  private counter = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly timeoutMs: number,
  ) {
    this.subscription = nc.subscribe(`${this.prefix}.*`, { callback: (_error, msg) => this.onAck(msg) });
    this.sweeper = setInterval(() => this.expire(), Math.max(50, Math.min(1000, timeoutMs / 4)));
    this.sweeper.unref();
  }

  /** Publishes and resolves with the stream sequence the message got. */
  publish(subject: string, data: Uint8Array, expect: PublishExpectations = {}): Promise<number> {
    const token = (++this.counter).toString(36);
    let h: MsgHdrs | undefined;
    if (expect.msgID !== undefined) (h ??= newHeaders()).set("Nats-Msg-Id", expect.msgID);
    if (expect.lastSubjectSequence !== undefined) (h ??= newHeaders()).set("Nats-Expected-Last-Subject-Sequence", String(expect.lastSubjectSequence));
    for (const [name, value] of expect.headers ?? []) (h ??= newHeaders()).set(name, value);
    return new Promise<number>((resolve, reject) => {
      this.pending.set(token, { resolve, reject, deadline: Date.now() + this.timeoutMs, duplicateIsError: expect.duplicateIsError === true });
      try {
        this.nc.publish(subject, data, h === undefined ? { reply: `${this.prefix}.${token}` } : { reply: `${this.prefix}.${token}`, headers: h });
      } catch (error) {
        this.pending.delete(token);
        reject(error as Error);
      }
    });
  }

  private onAck(msg: Msg): void {
    const token = msg.subject.slice(this.prefix.length + 1);
    const waiter = this.pending.get(token);
    if (waiter === undefined) return;
    this.pending.delete(token);
    if (msg.headers?.code === 503) {
      waiter.reject(new PublishUnconfirmedError("no JetStream responders for the publish (stream unavailable)"));
      return;
    }
    let ack: { seq?: unknown; duplicate?: unknown; error?: { code?: number; err_code?: number; description?: string } };
    try {
      ack = JSON.parse(decoder.decode(msg.data)) as typeof ack;
    } catch {
      waiter.reject(new PublishUnconfirmedError(`unreadable publish ack: ${decoder.decode(msg.data).slice(0, 200)}`));
      return;
    }
    if (ack.error !== undefined) {
      waiter.reject(new PublishRejectedError(ack.error.code ?? 0, ack.error.err_code ?? 0, ack.error.description ?? "unknown error"));
    } else if (ack.duplicate === true && waiter.duplicateIsError) {
      waiter.reject(new PublishDuplicateError(typeof ack.seq === "number" ? ack.seq : 0));
    } else if (typeof ack.seq === "number") {
      waiter.resolve(ack.seq);
    } else {
      waiter.reject(new PublishUnconfirmedError(`publish ack without a sequence: ${decoder.decode(msg.data).slice(0, 200)}`));
    }
  }

  private expire(): void {
    const now = Date.now();
    for (const [token, waiter] of this.pending) {
      if (waiter.deadline > now) continue;
      this.pending.delete(token);
      waiter.reject(new PublishUnconfirmedError(`no publish ack within ${this.timeoutMs} ms`));
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    this.subscription.unsubscribe();
    for (const waiter of this.pending.values()) waiter.reject(new PublishUnconfirmedError("the store was closed before the publish was acknowledged"));
    this.pending.clear();
  }
}
