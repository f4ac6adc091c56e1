// Live fan-out: however many clients follow one stream, the gateway holds ONE store
// subscription for it (JetStream consumers are not free) and multiplexes it. A client that
// starts at offset k is attached to the shared feed first (buffering what arrives), then
// reads [k, H] from the store, where H is the last offset the shared feed had delivered at the
// moment of attaching; after that it takes the buffered and live events above H. Attaching is
// synchronous, so nothing between history and live is missed or repeated. History goes at the
// client's pace: a page of at most HISTORY_PAGE_BYTES is read only once the client has taken
// the one before, so a client that stops reading holds one page, not the stream.

import type { AgentEvent } from "@agentrt/contract";
import { AsyncQueue, type EventStore, type Subscription } from "@agentrt/streams";

/** A client this many events behind is cut off; it reconnects from its last offset. */
export const MAX_CLIENT_BACKLOG = 10_000;
/**
 * Or this many bytes of event JSON behind (a WebSocket's own bound). Counted in events alone, an
 * SSE client that never read held up to 10 000 events of up to 1 MiB each: 327 appends of 880 kB
 * took the gateway from 180 MB to 754 MB for one such client.
 */
export const MAX_CLIENT_BACKLOG_BYTES = 8 * 1024 * 1024;

/**
 * An event's JSON, made once however many clients hold it: the hub measures backlogs with it and
 * the SSE and WebSocket pumps send it. It lives as long as the event does (while queued).
 */
const texts = new WeakMap<AgentEvent, string>();
export function eventJson(event: AgentEvent): string {
  let text = texts.get(event);
  if (text === undefined) {
    text = JSON.stringify(event);
    texts.set(event, text);
  }
  return text;
}
const sizeOf = (event: AgentEvent): number => eventJson(event).length;
const HISTORY_PAGE = 500;
/** A history page's JSON stops before this many bytes (an event larger than it is a page alone). */
export const HISTORY_PAGE_BYTES = 1024 * 1024;

interface Client {
  readonly ephemeral: boolean;
  readonly queue: AsyncQueue<AgentEvent>;
  /** Live events that arrived while this client was still reading history. */
  pending: AgentEvent[] | null;
  /** The last durable offset handed to this client: nothing at or below it is sent again. */
  last: number;
  /** Events queued and not yet taken by the client. */
  backlog: number;
  /** Their JSON's length, and that of the live events waiting in `pending`. */
  backlogBytes: number;
  pendingBytes: number;
}

interface Feed {
  readonly clients: Set<Client>;
  /** The last durable offset the shared subscription has delivered. */
  delivered: number;
  upstream: Subscription;
}

export class LiveHub {
  private readonly feeds = new Map<string, Promise<Feed>>();

  constructor(private readonly store: EventStore) {}

  /** Open shared store subscriptions (for metrics and tests). */
  get sharedSubscriptions(): number {
    return this.feeds.size;
  }

  subscribe(streamPath: string, fromOffset: number, ephemeral: boolean): Subscription {
    const client: Client = {
      ephemeral,
      queue: new AsyncQueue<AgentEvent>(() => void this.detach(streamPath, client)),
      pending: [],
      last: fromOffset - 1,
      backlog: 0,
      backlogBytes: 0,
      pendingBytes: 0,
    };
    void this.attach(streamPath, client, fromOffset).catch((error: unknown) => client.queue.end(error));
    const queue = client.queue;
    async function* taken(): AsyncGenerator<AgentEvent> {
      for await (const event of queue) {
        client.backlog -= 1;
        client.backlogBytes -= sizeOf(event);
        yield event;
      }
    }
    return {
      [Symbol.asyncIterator]: taken,
      close: async () => {
        queue.end();
        await this.detach(streamPath, client);
      },
    };
  }

  private async attach(streamPath: string, client: Client, fromOffset: number): Promise<void> {
    const feed = await this.feedFor(streamPath);
    if (client.queue.closed) return;
    feed.clients.add(client);
    const through = feed.delivered;
    for (let next = fromOffset; next <= through; ) {
      // The page before is taken (or the client is gone) before the next is read.
      await client.queue.below(0);
      if (client.queue.closed) return;
      const page = await this.store.read(streamPath, { fromOffset: next, limit: Math.min(HISTORY_PAGE, through - next + 1), maxBytes: HISTORY_PAGE_BYTES });
      if (page.length === 0) break;
      for (const event of page) this.push(client, event);
      next = page.at(-1)!.offset + 1;
    }
    const pending = client.pending ?? [];
    client.pending = null;
    client.pendingBytes = 0;
    for (const event of pending) this.push(client, event);
  }

  /** Hands one event to a client: durable ones strictly in offset order, each once. */
  private push(client: Client, event: AgentEvent): void {
    if (event.ephemeral === true) {
      if (!client.ephemeral) return;
    } else {
      if (event.offset <= client.last) return;
      client.last = event.offset;
    }
    client.backlogBytes += sizeOf(event);
    // At least one event is always queued, however large.
    if (++client.backlog > MAX_CLIENT_BACKLOG || (client.backlog > 1 && client.backlogBytes > MAX_CLIENT_BACKLOG_BYTES)) this.cutOff(client);
    else client.queue.push(event);
  }

  /** Ends a client too far behind (it resumes from its last offset) and drops what it held. */
  private cutOff(client: Client): void {
    client.pending = null;
    client.pendingBytes = 0;
    client.queue.end();
  }

  private feedFor(streamPath: string): Promise<Feed> {
    let feed = this.feeds.get(streamPath);
    if (feed === undefined) {
      feed = this.openFeed(streamPath);
      this.feeds.set(streamPath, feed);
      feed.catch(() => this.feeds.delete(streamPath));
    }
    return feed;
  }

  private async openFeed(streamPath: string): Promise<Feed> {
    const last = await this.store.lastOffset(streamPath);
    const feed: Feed = { clients: new Set(), delivered: last, upstream: this.store.subscribe(streamPath, { fromOffset: last + 1, ephemeral: true }) };
    void (async () => {
      try {
        for await (const event of feed.upstream) {
          if (event.ephemeral !== true) feed.delivered = event.offset;
          for (const client of feed.clients) {
            if (client.pending === null) this.push(client, event);
            // Still reading history: live events wait, as many as a backlog may hold.
            // Bytes: room is left for the history page still queued when they join the backlog.
            else if (client.pending.length >= MAX_CLIENT_BACKLOG || client.pendingBytes + sizeOf(event) > MAX_CLIENT_BACKLOG_BYTES - HISTORY_PAGE_BYTES) this.cutOff(client);
            else {
              client.pending.push(event);
              client.pendingBytes += sizeOf(event);
            }
          }
        }
        this.endFeed(streamPath, feed);
      } catch (error) {
        this.endFeed(streamPath, feed, error);
      }
    })();
    return feed;
  }

  private endFeed(streamPath: string, feed: Feed, error?: unknown): void {
    for (const client of feed.clients) client.queue.end(error);
    feed.clients.clear();
    void this.feeds.get(streamPath)?.then((current) => current === feed && this.feeds.delete(streamPath));
  }

  private async detach(streamPath: string, client: Client): Promise<void> {
    const promise = this.feeds.get(streamPath);
    if (promise === undefined) return;
    const feed = await promise.catch(() => undefined);
    if (feed === undefined) return;
    feed.clients.delete(client);
    if (feed.clients.size === 0 && this.feeds.get(streamPath) === promise) {
      this.feeds.delete(streamPath);
      await feed.upstream.close();
    }
  }
}
