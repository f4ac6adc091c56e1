// JetStream direct gets (`$JS.API.DIRECT.GET.<stream>`) on the store's inbox (inbox-requests.ts)
// instead of nats.js's `jsm.direct.getMessage`, which makes each one a `request` of its own.
// The same requests and answers: `last_by_subj` goes in the subject (so a KV bucket's
// permissions apply to it), `next_by_subj` in the body; a 404 "message not found" is no
// message; no responders (a stream without a leader), a timeout, and the server's other
// statuses are errors classified as nats.js's were (errors.ts).

import { type Msg, type MsgHdrs, errors } from "@nats-io/nats-core";
import type { InboxRequests } from "./inbox-requests.ts";

export type DirectQuery = { readonly last_by_subj: string } | { readonly next_by_subj: string; readonly seq: number };

/** A message read by a direct get. */
export interface DirectMessage {
  readonly seq: number;
  readonly subject: string;
  readonly data: Uint8Array;
  readonly header: MsgHdrs;
  /** When the server stored it, from the header the server adds after the stored ones. */
  readonly time: Date | undefined;
}

/** A KV entry as the KV client reads it: a delete or purge marker is an entry with that operation. */
export interface DirectKvEntry {
  readonly operation: "PUT" | "DEL" | "PURGE";
  readonly value: Uint8Array;
  readonly revision: number;
}

/** The server answered a direct get with a status other than "not found" or "no responders". */
export class DirectGetError extends Error {
  constructor(
    readonly status: number,
    description: string,
  ) {
    super(`direct get: ${description} (status ${status})`);
    this.name = "DirectGetError";
  }
}

const encoder = new TextEncoder();
const EMPTY = new Uint8Array(0);

export class DirectGets {
  constructor(
    private readonly requests: InboxRequests,
    private readonly apiPrefix = "$JS.API",
  ) {}

  /** The message the query names, or null when there is none. */
  get(stream: string, query: DirectQuery): Promise<DirectMessage | null> {
    const subject = "last_by_subj" in query ? `${this.apiPrefix}.DIRECT.GET.${stream}.${query.last_by_subj}` : `${this.apiPrefix}.DIRECT.GET.${stream}`;
    const body = "last_by_subj" in query ? EMPTY : encoder.encode(JSON.stringify(query));
    return new Promise<DirectMessage | null>((resolve, reject) => {
      this.requests.send(subject, body, undefined, {
        answered: (msg) => {
          try {
            resolve(directMessageOf(msg, subject));
          } catch (error) {
            reject(error as Error);
          }
        },
        unanswered: (why) => reject(why === "timeout" ? new errors.TimeoutError() : new errors.ClosedConnectionError()),
      });
    });
  }

  /** The entry of `key` in KV bucket `bucket` (its last message, `KV-Operation` read), or null when it never had one. */
  async kvEntry(bucket: string, key: string): Promise<DirectKvEntry | null> {
    const msg = await this.get(`KV_${bucket}`, { last_by_subj: `$KV.${bucket}.${key}` });
    if (msg === null) return null;
    const operation = msg.header.get("KV-Operation");
    return { operation: operation === "DEL" || operation === "PURGE" ? operation : "PUT", value: msg.data, revision: msg.seq };
  }
}

function directMessageOf(msg: Msg, subject: string): DirectMessage | null {
  const headers = msg.headers;
  if (headers === undefined) throw new DirectGetError(0, `an answer on ${subject} without headers`);
  if (headers.code === 503) throw new errors.RequestError(`no responders: '${subject}'`, { cause: new errors.NoRespondersError(subject) });
  if (headers.code === 404 && headers.description.toLowerCase() === "message not found") return null;
  if (headers.code !== 0) throw new DirectGetError(headers.code, headers.description);
  // The server's own headers come after the stored message's, which a publisher chose: the last
  // value is the server's (a stored `Nats-Time-Stamp` had passed for the time it was stored).
  const seq = headers.last("Nats-Sequence");
  const stamp = Date.parse(headers.last("Nats-Time-Stamp"));
  return { seq: seq === "" ? 0 : Number.parseInt(seq, 10), subject: headers.last("Nats-Subject"), data: msg.data, header: headers, time: Number.isNaN(stamp) ? undefined : new Date(stamp) };
}
