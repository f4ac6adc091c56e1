// A read-through cache of agent streams, kept current by the store's partition feed, so a
// worker does not re-read a whole stream (one round trip per stored batch, and past a few
// records an ordered consumer, which a cluster creates through its meta leader) for each item
// it serves: the llm-driver before calling the model, the capability host before each script.
// The stream stays the truth: an entry is only ever extended with contiguous offsets; a gap
// drops the entry and the next read goes to the stream again. Events after the one asked for
// that have not arrived yet are harmless: the driver watches for a settlement of its request
// anyway, the host appends `started` conditionally on the offset it read, and keyed settlement
// batches commit nothing if someone else settled first.
//
// The same feed also tells a running turn about new events on its stream (`watch`), so a
// turn needs no JetStream consumer of its own to notice that someone else settled it.
//
// It follows the store's feed of every partition itself, or is fed by its caller: an
// agent-reducer that runs the llm-driver in its own process hands the driver's cache the
// batches of the partitions it owns, which it receives anyway (one delivery and one decode of
// each record in that process, not two). Then only those partitions' streams are cached and
// watched; a stream of any other partition is read on every ask and watched by the caller.
//
// It holds nothing for an idle agent: an entry unused for `idleMs` is dropped (its next read
// goes to the stream once again), and all entries together stay under `maxBytes` (their
// events' JSON size), least recently used dropped first.

import { type AgentEvent, isRetryable } from "@agentrt/contract";
import { type EventStore, type FeedBatch, type FeedSubscription, offsetsOfBatch } from "@agentrt/streams";
import type { Logger } from "./logger.ts";

interface Entry {
  events: AgentEvent[];
  last: number;
  /** The events' encoded size: their records' bytes where the feed gave them, else their JSON's length. */
  bytes: number;
  /** When a turn last asked for this stream (epoch ms). */
  usedAtMs: number;
  /** Feed batches that arrived while the first read was in flight. */
  pending: FeedBatch[] | null;
  waiters: Set<() => void>;
}

export interface StreamCacheOptions {
  readonly store: EventStore;
  readonly logger: Logger;
  /**
   * Feed position to follow the store's feed from (the store's current head; older batches are
   * not needed), or `"fed by caller"`: the caller hands it batches (`followPartition`,
   * `feedBatch`, `unfollowPartition`) and it follows no feed of its own.
   */
  readonly afterSequence: number | "fed by caller";
  readonly maxStreams?: number;
  /** Bound on the cached events' JSON size, all streams together. */
  readonly maxBytes?: number;
  /** A stream no turn asked for in this long is dropped. */
  readonly idleMs?: number;
  /**
   * How long a turn waits for the feed to deliver its request before reading instead (default
   * 1 s). The reducer hands a request over while appending it, so the work item usually comes
   * first and the wait is the append's round trips; a loaded machine can stretch those, and
   * giving up early costs a whole read and a redelivery.
   */
  readonly feedWaitMs?: number;
  readonly now?: () => number;
}

/**
 * What feeds a stream cache fed by its caller (`afterSequence: "fed by caller"`): the agent-reducer
 * hands its in-process driver's cache the batches of the partitions it owns.
 */
export interface PartitionBatchSink {
  followPartition(partition: number): void;
  /** One batch of the partition's feed; the caller's own feed is of that one partition. */
  feedBatch(partition: number, batch: FeedBatch): void;
  unfollowPartition(partition: number): void;
}

/** Called with each batch of a watched stream's events, in stream order. */
export type StreamWatcher = (events: readonly AgentEvent[]) => void;

/** Pause before following an ended feed again. */
const FEED_RETRY_MS = 250;

export const STREAM_CACHE_DEFAULTS = { maxStreams: 2_000, maxBytes: 64 * 1024 * 1024, idleMs: 60_000 } as const;

const jsonSize = (events: readonly AgentEvent[]) => events.reduce((sum, e) => sum + JSON.stringify(e).length, 0);

export class StreamCache implements PartitionBatchSink {
  private readonly entries = new Map<string, Entry>();
  private readonly watchers = new Map<string, Set<StreamWatcher>>();
  private feedRunning = false;
  /** Fed by its caller: the partitions whose batches it is handed now. */
  private readonly fedPartitions: Set<number> | undefined;
  private stopping = false;
  private readonly maxStreams: number;
  private readonly maxBytes: number;
  private readonly idleMs: number;
  private readonly feedWaitMs: number;
  private readonly now: () => number;
  private totalBytes = 0;
  private feed: FeedSubscription | undefined;
  private following: Promise<void> | undefined;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly options: StreamCacheOptions) {
    this.maxStreams = options.maxStreams ?? STREAM_CACHE_DEFAULTS.maxStreams;
    this.maxBytes = options.maxBytes ?? STREAM_CACHE_DEFAULTS.maxBytes;
    this.idleMs = options.idleMs ?? STREAM_CACHE_DEFAULTS.idleMs;
    this.feedWaitMs = options.feedWaitMs ?? 1_000;
    this.now = options.now ?? Date.now;
    if (options.afterSequence === "fed by caller") this.fedPartitions = new Set();
  }

  start(): void {
    this.feedRunning = true;
    this.sweeper = setInterval(() => this.dropIdle(), Math.max(10, Math.floor(this.idleMs / 4)));
    this.sweeper.unref();
    const after = this.options.afterSequence;
    if (after === "fed by caller") return;
    this.following = this.follow(after).finally(() => {
      this.feedRunning = false;
      // Watchers learn nothing more from here: let them fall back to their own subscriptions.
      this.watchers.clear();
    });
  }

  /**
   * Fed by its caller: the partition's batches come from now on, in feed order, from the
   * caller's own feed of it (which may begin behind the head, or start over from an earlier
   * batch: what the cache has already is skipped, a gap forgets the stream).
   */
  followPartition(partition: number): void {
    // Not once it gave up (or stopped): it caches nothing from then on.
    if (this.feedRunning) this.fedPartitions?.add(partition);
  }

  /**
   * Fed by its caller: the partition's batches stop coming (its reducer lost the lease). Its
   * streams are forgotten, and their watchers hear nothing more: a turn then running on one of
   * them learns of someone else's settlement when its own commits nothing (keyed).
   */
  unfollowPartition(partition: number): void {
    if (this.fedPartitions?.delete(partition) !== true) return;
    for (const [path, entry] of this.entries) if (this.options.store.partitionOf(path) === partition) this.drop(path, entry);
    for (const path of [...this.watchers.keys()]) if (this.options.store.partitionOf(path) === partition) this.watchers.delete(path);
  }

  /**
   * Fed by its caller: one batch of a followed partition's feed. The store's view of the
   * stream's end learns of it too, as it does from a feed of the store's own: the driver's
   * settlement then appends without looking the end up.
   */
  feedBatch(partition: number, batch: FeedBatch): void {
    if (this.stopping || this.fedPartitions?.has(partition) !== true) return;
    const offsets = offsetsOfBatch(batch);
    if (offsets === undefined) return;
    this.options.store.primeAppend(batch.streamPath, { record: { sequence: batch.sequence, lastOffset: offsets.last } });
    try {
      this.apply(batch);
    } catch (error) {
      // Our own fault, and the caller's feed must go on whatever the cache does with it.
      this.giveUp(error);
    }
  }

  /** Whether the feed brings this stream's batches (so it may be cached and watched). */
  private follows(streamPath: string): boolean {
    if (this.fedPartitions === undefined) return this.feed !== undefined;
    return this.feedRunning && !this.stopping && this.fedPartitions.has(this.options.store.partitionOf(streamPath));
  }

  /**
   * Follows the feed, and follows it again from the last batch when it ends retryably (its
   * consumer lost with a NATS node, and no new one could be made during the election): resumed
   * there, nothing is skipped, so the cached streams stay valid. A cache whose feed ended for
   * good read every stream in full on every turn until the process restarted (the long chaos
   * soak's drivers after node kills). Only a terminal error, or stop(), ends it.
   */
  private async follow(afterSequence: number): Promise<void> {
    let after = afterSequence;
    while (!this.stopping) {
      try {
        const feed = this.options.store.feed({ afterSequence: after });
        this.feed = feed;
        for await (const batch of feed) {
          after = batch.sequence;
          try {
            this.apply(batch);
          } catch (error) {
            // Our own fault, not the feed's: following again would meet it again.
            this.giveUp(error);
            return;
          }
        }
      } catch (error) {
        if (this.stopping) return;
        // The contract's rule (what the work queue also retries by): the store classifies its
        // own failures; anything it did not is taken as transient.
        if (!isRetryable(error)) {
          this.giveUp(error);
          return;
        }
        this.options.logger.warn({ err: error, afterSequence: after }, "stream cache feed ended; following it again from its last batch");
      }
      if (this.stopping) return;
      await new Promise((resolve) => setTimeout(resolve, FEED_RETRY_MS));
    }
  }

  /** Ends the cache for good: every turn reads its stream from now on. */
  private giveUp(error: unknown): void {
    this.options.logger.error({ err: error }, "stream cache feed ended; every turn reads its stream from now on");
    // Nothing is cached from here: an entry would never learn its stream's new events.
    this.feed = undefined;
    if (this.fedPartitions !== undefined) {
      this.fedPartitions.clear();
      this.feedRunning = false;
      this.watchers.clear();
    }
    this.entries.clear();
    this.totalBytes = 0;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.feedRunning = false;
    if (this.sweeper) clearInterval(this.sweeper);
    await this.feed?.close();
    await this.following;
  }

  /**
   * Calls `watcher` with the stream's events from `fromOffset` on as the feed brings them
   * (first with those already cached). Undefined when the feed is not running: the caller
   * then watches the stream itself. Returns the function that stops watching.
   */
  watch(streamPath: string, fromOffset: number, watcher: StreamWatcher): (() => void) | undefined {
    if (!this.feedRunning || !this.follows(streamPath)) return undefined;
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
      this.drop(streamPath, entry);
    }
    const events = await this.load(streamPath);
    if ((events.at(-1)?.offset ?? 0) >= offset) return events;
    // The reducer hands a request over while it is still being appended: a read that ended just
    // before it waits for the feed to bring it, like a cached stream does.
    const loaded = this.entries.get(streamPath);
    if (loaded !== undefined && loaded.pending === null && (loaded.last >= offset || (await this.waitFor(loaded, offset)))) return loaded.events.slice();
    return events;
  }

  /** Drops streams no turn asked for within the idle time (the map is in order of use). */
  dropIdle(): void {
    const cutoff = this.now() - this.idleMs;
    for (const [path, entry] of this.entries) {
      if (entry.usedAtMs > cutoff) break;
      if (entry.pending === null) this.drop(path, entry);
    }
  }

  private async load(streamPath: string): Promise<readonly AgentEvent[]> {
    const entry: Entry = { events: [], last: 0, bytes: 0, usedAtMs: this.now(), pending: [], waiters: new Set() };
    if (this.follows(streamPath)) this.insert(streamPath, entry);
    let events: AgentEvent[];
    try {
      events = await this.options.store.read(streamPath);
    } catch (error) {
      this.drop(streamPath, entry);
      throw error;
    }
    const pending = entry.pending ?? [];
    entry.events = events;
    entry.last = events.at(-1)?.offset ?? 0;
    entry.pending = null;
    if (this.entries.get(streamPath) === entry) this.grow(entry, jsonSize(events));
    for (const batch of pending) this.extend(streamPath, entry, batch);
    this.trim(streamPath);
    return events.slice();
  }

  private apply(batch: FeedBatch): void {
    const { streamPath, events } = batch;
    const watchers = this.watchers.get(streamPath);
    if (watchers !== undefined) for (const watcher of [...watchers]) watcher(events);
    const entry = this.entries.get(streamPath);
    if (entry === undefined) return;
    if (entry.pending !== null) entry.pending.push(batch);
    else {
      this.extend(streamPath, entry, batch);
      this.trim(streamPath);
    }
  }

  /** `bytes`: the record's size when the feed gave it (then the events need not be encoded again to be counted). */
  private extend(streamPath: string, entry: Entry, batch: Pick<FeedBatch, "events" | "bytes" | "offsets">): void {
    const { events, bytes } = batch;
    // The record's offsets, when known, include events this version cannot read (a newer
    // writer's): passed over like the store's reads pass them, not taken for a gap.
    const offsets = offsetsOfBatch(batch);
    if (offsets === undefined || offsets.last <= entry.last) return;
    const fresh = events.filter((e) => e.offset > entry.last);
    if (offsets.first > entry.last + 1) {
      // A gap (a batch the feed skipped or we missed): forget the stream rather than guess.
      this.drop(streamPath, entry);
      return;
    }
    entry.events.push(...fresh);
    if (this.entries.get(streamPath) === entry && fresh.length > 0) this.grow(entry, bytes !== undefined && fresh.length === events.length ? bytes : jsonSize(fresh));
    entry.last = offsets.last;
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
    this.trim(streamPath);
  }

  private grow(entry: Entry, bytes: number): void {
    entry.bytes += bytes;
    this.totalBytes += bytes;
  }

  private drop(streamPath: string, entry: Entry): void {
    if (this.entries.get(streamPath) !== entry) return;
    this.entries.delete(streamPath);
    this.totalBytes -= entry.bytes;
  }

  /** Drops least recently used streams (never `keep`) until under both bounds. */
  private trim(keep: string): void {
    for (const [path, entry] of this.entries) {
      if (this.entries.size <= this.maxStreams && this.totalBytes <= this.maxBytes) return;
      if (path !== keep) this.drop(path, entry);
    }
    // `keep` alone is over the byte bound: it is not cached (its turn has its events already).
    if (this.totalBytes > this.maxBytes) {
      const entry = this.entries.get(keep);
      if (entry !== undefined && entry.pending === null) this.drop(keep, entry);
    }
  }

  private touch(streamPath: string, entry: Entry): void {
    // Map order is insertion order: re-inserting makes this the most recently used.
    entry.usedAtMs = this.now();
    this.entries.delete(streamPath);
    this.entries.set(streamPath, entry);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The cached events' JSON size, all streams together. */
  get bytes(): number {
    return this.totalBytes;
  }
}
