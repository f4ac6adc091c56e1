// Requests answered on ONE wildcard inbox subscription. nats.js's `request` builds, per
// request, a timer and an `Error` (its request is cancelled after the answer arrived, and the
// cancel constructs a RequestError with a stack trace): at thousands of requests a second
// that was about 2 % of a reducer's CPU (BENCHMARKS.md, "Direct gets on the store's inbox").
// Here a request is a plain PUB with a reply subject under this inbox's prefix, answers are
// matched by token, and one sweeping timer expires the unanswered. The hot-path publisher
// (publisher.ts) and the direct gets (direct-get.ts) share one.

import { type Msg, type MsgHdrs, type NatsConnection, type Subscription, createInbox } from "@nats-io/nats-core";

/** What a request does with its answer, or with no answer in time. */
export interface InboxWaiter {
  answered(msg: Msg): void;
  /** No answer by the deadline (`"timeout"`), or the requests were closed first (`"closed"`). */
  unanswered(why: "timeout" | "closed"): void;
}

interface Pending {
  readonly waiter: InboxWaiter;
  readonly deadline: number;
}

/**
 * A new inbox under the connection's own prefix (nats.js `inboxPrefix`, which `connectNats` sets
 * per NATS user): a user may read only its own replies, so a reply subject made without it would
 * never be delivered.
 */
export function newInbox(nc: NatsConnection): string {
  return createInbox((nc as NatsConnection & { options?: { inboxPrefix?: string } }).options?.inboxPrefix);
}

export class InboxRequests {
  private readonly prefix: string;
  private readonly pending = new Map<string, Pending>();
  private readonly subscription: Subscription;
  private readonly sweeper: NodeJS.Timeout;
  private counter = 0;

  constructor(
    private readonly nc: NatsConnection,
    /** How long a request waits for its answer. */
    readonly timeoutMs: number,
  ) {
    this.prefix = newInbox(nc);
    this.subscription = nc.subscribe(`${this.prefix}.*`, {
      // A refused subscription calls back with an error and no message.
      callback: (error, msg) => {
        if (error === null) this.onAnswer(msg);
      },
    });
    this.sweeper = setInterval(() => this.expire(), Math.max(50, Math.min(1000, timeoutMs / 4)));
    this.sweeper.unref();
  }

  /** Sends `data` to `subject` with a reply subject of this inbox; the waiter hears the outcome. */
  send(subject: string, data: Uint8Array, headers: MsgHdrs | undefined, waiter: InboxWaiter): void {
    const token = (++this.counter).toString(36);
    const reply = `${this.prefix}.${token}`;
    this.pending.set(token, { waiter, deadline: Date.now() + this.timeoutMs });
    try {
      this.nc.publish(subject, data, headers === undefined ? { reply } : { reply, headers });
    } catch (error) {
      this.pending.delete(token);
      throw error;
    }
  }

  private onAnswer(msg: Msg): void {
    const token = msg.subject.slice(this.prefix.length + 1);
    const pending = this.pending.get(token);
    if (pending === undefined) return;
    this.pending.delete(token);
    pending.waiter.answered(msg);
  }

  private expire(): void {
    const now = Date.now();
    for (const [token, pending] of this.pending) {
      if (pending.deadline > now) continue;
      this.pending.delete(token);
      pending.waiter.unanswered("timeout");
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    this.subscription.unsubscribe();
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const pending of waiting) pending.waiter.unanswered("closed");
  }
}
