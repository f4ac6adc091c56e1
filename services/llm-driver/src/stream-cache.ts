// A read-through cache of agent streams, kept current by the store's partition feed, so a
// turn does not re-read its whole stream (one round trip per stored batch) before calling
// the model. The stream stays the truth: an entry is only ever extended with contiguous
// offsets; a gap drops the entry and the next turn reads the stream again. Events after R
// that have not arrived yet are harmless: the run watches for a settlement of R anyway, and
// a keyed settlement batch commits nothing if someone else settled first.
//
// The same feed also tells a running turn about new events on its stream (`watch`), so a
// turn needs no JetStream consumer of its own to notice that someone else settled it.

import type { AgentEvent } from "@agentrt/contract";
import type { Logger } from "@agentrt/service-kit";
import type { EventStore, FeedSubscription } from "@agentrt/streams";

interface Entry {
  events: AgentEvent[];
  last: number;
  /** Feed batches that arrived while the first read was in flight. */
  pending: AgentEvent[][] | null;
  waiters: Set<() => void>;
}

export interface StreamCacheOptions {
  readonly store: EventStore;
  readonly logger: Logger;
  /** Feed position to follow from (the store's current head); older batches are not needed. */
  readonly afterSequence: number;
  readonly maxStreams?: number;
  /** How long a turn waits for the feed to deliver its request before reading instead. */
  readonly feedWaitMs?: number;
}

/** Called with each batch of a watched stream's events, in stream order. */
export type StreamWatcher = (events: readonly AgentEvent[]) => void;

export class StreamCache {
  private readonly entries = new Map<string, Entry>();
  private readonly watchers = new Map<string, Set<StreamWatcher>>();
  private feedRunning = false;
  private readonly maxStreams: number;
  private readonly feedWaitMs: number;
  private feed: FeedSubscription | undefined;
  private following: Promise<void> | undefined;

  constructor(private readonly options: StreamCacheOptions) {
    this.maxStreams = options.maxStreams ?? 2_000;
    this.feedWaitMs = options.feedWaitMs ?? 250;
  }

  start(): void {
    this.feed = this.options.store.feed({ afterSequence: this.options.afterSequence });
    const feed = this.feed;
    this.feedRunning = true;
    this.following = (async () => {
      for await (const batch of feed) this.apply(batch.streamPath, batch.events);
    })()
      .catch((error: unknown) => {
        this.options.logger.error({ err: error }, "stream cache feed ended; every turn reads its stream from now on");
        this.entries.clear();
      })
      .finally(() => {
        this.feedRunning = false;
        // Watchers learn nothing more from here: let them fall back to their own subscriptions.
        this.watchers.clear();
      });
  }

  async stop(): Promise<void> {
    await this.feed?.close();
    await this.following;
  }

  /**
   * Calls `watcher` with the stream's events from `fromOffset` on as the feed brings them
   * (first with those already cached). Undefined when the feed is not running: the caller
   * then watches the stream itself. Returns the function that stops watching.
   */
  watch(streamPath: string, fromOffset: number, watcher: StreamWatcher): (() => void) | undefined {
    if (!this.feedRunning) return undefined;
    let set = this.watchers.get(streamPath);
    if (set === undefined) {
      set = new Set();
      this.watchers.set(streamPath, set);
    }
    set.add(watcher);
    const entry = this.entries.get(streamPath);
    if (entry !== undefined && entry.pending === null) {
      const known = entry.events.filter((e) => e.offset >= fromOffset);
      if (known.length > 0) watcher(known);
    }
    return () => {
      const current = this.watchers.get(streamPath);
      if (current === undefined) return;
      current.delete(watcher);
      if (current.size === 0) this.watchers.delete(streamPath);
    };
  }

  /** The stream's durable events, at least through `offset` when the stream has it. */
  async eventsThrough(streamPath: string, offset: number): Promise<readonly AgentEvent[]> {
    const entry = this.entries.get(streamPath);
    if (entry !== undefined && entry.pending === null) {
      this.touch(streamPath, entry);
      if (entry.last >= offset || (await this.waitFor(entry, offset))) return entry.events.slice();
      this.entries.delete(streamPath);
    }
    return this.load(streamPath);
  }

  private async load(streamPath: string): Promise<readonly AgentEvent[]> {
    const entry: Entry = { events: [], last: 0, pending: [], waiters: new Set() };
    if (this.feed !== undefined) this.insert(streamPath, entry);
    let events: AgentEvent[];
    try {
      events = await this.options.store.read(streamPath);
    } catch (error) {
      if (this.entries.get(streamPath) === entry) this.entries.delete(streamPath);
      throw error;
    }
    const pending = entry.pending ?? [];
    entry.events = events;
    entry.last = events.at(-1)?.offset ?? 0;
    entry.pending = null;
    for (const batch of pending) this.extend(streamPath, entry, batch);
    return events.slice();
  }

  private apply(streamPath: string, events: readonly AgentEvent[]): void {
    const watchers = this.watchers.get(streamPath);
    if (watchers !== undefined) for (const watcher of [...watchers]) watcher(events);
    const entry = this.entries.get(streamPath);
    if (entry === undefined) return;
    if (entry.pending !== null) entry.pending.push([...events]);
    else this.extend(streamPath, entry, events);
  }

  private extend(streamPath: string, entry: Entry, events: readonly AgentEvent[]): void {
    const fresh = events.filter((e) => e.offset > entry.last);
    if (fresh.length === 0) return;
    if ((fresh[0] as AgentEvent).offset !== entry.last + 1) {
      // A gap (a batch the feed skipped or we missed): forget the stream rather than guess.
      if (this.entries.get(streamPath) === entry) this.entries.delete(streamPath);
      return;
    }
    entry.events.push(...fresh);
    entry.last = (fresh.at(-1) as AgentEvent).offset;
    for (const wake of [...entry.waiters]) wake();
  }

  private waitFor(entry: Entry, offset: number): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        entry.waiters.delete(check);
        resolve(ok);
      };
      const check = (): void => {
        if (entry.last >= offset) done(true);
      };
      const timer = setTimeout(() => done(false), this.feedWaitMs);
      entry.waiters.add(check);
    });
  }

  private insert(streamPath: string, entry: Entry): void {
    this.entries.set(streamPath, entry);
    if (this.entries.size > this.maxStreams) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }

  private touch(streamPath: string, entry: Entry): void {
    // Map order is insertion order: re-inserting makes this the most recently used.
    this.entries.delete(streamPath);
    this.entries.set(streamPath, entry);
  }

  get size(): number {
    return this.entries.size;
  }
}
