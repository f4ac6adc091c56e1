// A lean JetStream publisher for the hot path. `js.publish` builds a request per message (a
// timer, a response subscription entry, and an `Error` constructed when the request is
// cancelled after its answer arrived); at thousands of appends per second that client CPU, not
// the server, was the bottleneck. This publisher sends plain PUBs whose acks come back on ONE
// wildcard inbox subscription (inbox-requests.ts). The store's appends, the key index's
// reservations and the reducer's work items go this way.

import { JetStreamApiCodes } from "@nats-io/jetstream";
import { type Msg, type MsgHdrs, type NatsConnection, headers as newHeaders } from "@nats-io/nats-core";
import { InboxRequests } from "./inbox-requests.ts";

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

const decoder = new TextDecoder();

export class JetStreamPublisher {
  /** The inbox the acks come back on; direct gets may share it (direct-get.ts). */
  readonly requests: InboxRequests;

  constructor(nc: NatsConnection, timeoutMs: number) {
    this.requests = new InboxRequests(nc, timeoutMs);
  }

  /** Publishes and resolves with the stream sequence the message got. */
  publish(subject: string, data: Uint8Array, expect: PublishExpectations = {}): Promise<number> {
    let h: MsgHdrs | undefined;
    if (expect.msgID !== undefined) (h ??= newHeaders()).set("Nats-Msg-Id", expect.msgID);
    if (expect.lastSubjectSequence !== undefined) (h ??= newHeaders()).set("Nats-Expected-Last-Subject-Sequence", String(expect.lastSubjectSequence));
    for (const [name, value] of expect.headers ?? []) (h ??= newHeaders()).set(name, value);
    const duplicateIsError = expect.duplicateIsError === true;
    const timeoutMs = this.requests.timeoutMs;
    return new Promise<number>((resolve, reject) => {
      this.requests.send(subject, data, h, {
        answered: (msg) => settleAck(msg, duplicateIsError, resolve, reject),
        unanswered: (why) =>
          reject(new PublishUnconfirmedError(why === "timeout" ? `no publish ack within ${timeoutMs} ms` : "the store was closed before the publish was acknowledged")),
      });
    });
  }

  close(): void {
    this.requests.close();
  }
}

function settleAck(msg: Msg, duplicateIsError: boolean, resolve: (seq: number) => void, reject: (error: Error) => void): void {
  if (msg.headers?.code === 503) {
    reject(new PublishUnconfirmedError("no JetStream responders for the publish (stream unavailable)"));
    return;
  }
  let ack: { seq?: unknown; duplicate?: unknown; error?: { code?: number; err_code?: number; description?: string } };
  try {
    ack = JSON.parse(decoder.decode(msg.data)) as typeof ack;
  } catch {
    reject(new PublishUnconfirmedError(`unreadable publish ack: ${decoder.decode(msg.data).slice(0, 200)}`));
    return;
  }
  if (ack.error !== undefined) {
    reject(new PublishRejectedError(ack.error.code ?? 0, ack.error.err_code ?? 0, ack.error.description ?? "unknown error"));
  } else if (ack.duplicate === true && duplicateIsError) {
    reject(new PublishDuplicateError(typeof ack.seq === "number" ? ack.seq : 0));
  } else if (typeof ack.seq === "number") {
    resolve(ack.seq);
  } else {
    reject(new PublishUnconfirmedError(`publish ack without a sequence: ${decoder.decode(msg.data).slice(0, 200)}`));
  }
}
