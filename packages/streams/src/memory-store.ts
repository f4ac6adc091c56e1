// The in-process EventStore for pure unit tests of other packages. Same port, same validation
// core and same shared suite as the JetStream store; everything lives in maps, and JavaScript's
// single thread makes each append atomic and each subscribe's history/live switch gap-free.

import type { AgentEvent } from "@agentrt/contract";
import { AsyncQueue } from "./async-queue.ts";
import { PageBudget, decideAppend, ephemeralEvents, knownLastOffsetOf, parsePartitions, parseReadOptions, prepareBatch } from "./batch.ts";
import {
  type AppendHint,
  type AppendOptions,
  type AppendResult,
  DEFAULT_MAX_EVENT_BYTES,
  type EventStore,
  type FeedBatch,
  type FeedOptions,
  type FeedSubscription,
  type LiveFeed,
  type ListOptions,
  type LiveFeedOptions,
  type ReadOptions,
  type StreamSummary,
  type SubscribeOptions,
  type Subscription,
} from "./event-store.ts";
import { partitionOfPath, validatePartitionCount } from "./partition.ts";
import { parseStreamPath } from "@agentrt/contract";

interface MemoryStream {
  readonly events: AgentEvent[];
  readonly keys: Map<string, AgentEvent>;
}

interface Listener {
  readonly streamPath: string;
  readonly ephemeral: boolean;
  readonly queue: AsyncQueue<AgentEvent>;
}

interface FeedListener {
  readonly partitions: ReadonlySet<number>;
  readonly queue: AsyncQueue<FeedBatch>;
}

interface LiveListener {
  readonly partitions: ReadonlySet<number>;
  /** Only these types; undefined: every type. */
  readonly types: ReadonlySet<string> | undefined;
  readonly queue: AsyncQueue<AgentEvent>;
}

export interface MemoryEventStoreOptions {
  readonly partitionCount?: number;
  /** The commit clock (default `() => new Date()`), so unit tests can pin createdAt. */
  readonly now?: () => Date;
  /** Largest event JSON an append accepts (default DEFAULT_MAX_EVENT_BYTES). */
  readonly maxEventBytes?: number;
}

export class MemoryEventStore implements EventStore {
  readonly partitionCount: number;
  private readonly now: () => Date;
  private readonly maxEventBytes: number;
  private readonly streams = new Map<string, MemoryStream>();
  private readonly log: FeedBatch[] = [];
  private readonly listeners = new Set<Listener>();
  private readonly feedListeners = new Set<FeedListener>();
  private readonly liveListeners = new Set<LiveListener>();
  private closed = false;

  constructor(options: MemoryEventStoreOptions = {}) {
    this.partitionCount = validatePartitionCount(options.partitionCount ?? 64);
    this.now = options.now ?? (() => new Date());
    this.maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  }

  partitionOf(streamPath: string): number {
    return partitionOfPath(parseStreamPath(streamPath), this.partitionCount);
  }

  async append(streamPath: string, events: readonly unknown[], options?: AppendOptions): Promise<AppendResult> {
    this.assertOpen();
    const batch = prepareBatch(streamPath, events, this.maxEventBytes);
    const createdAt = this.now().toISOString();
    const stream = this.streams.get(batch.streamPath);
    const lastOffset = stream?.events.length ?? 0;
    if (batch.ephemeral) {
      const live = ephemeralEvents(batch, knownLastOffsetOf(options) ?? lastOffset, createdAt);
      for (const event of live) this.deliver(event);
      const partition = this.partitionOf(batch.streamPath);
      for (const listener of this.liveListeners) {
        if (!listener.partitions.has(partition)) continue;
        for (const event of live) if (listener.types?.has(event.type) ?? true) listener.queue.push(event);
      }
      return { status: "committed", events: live };
    }
    const decision = decideAppend({ lastOffset, findKey: (k) => stream?.keys.get(k) }, batch, options, createdAt);
    if (decision.kind === "duplicate") return { status: "duplicate", events: decision.originals };
    const target = stream ?? { events: [], keys: new Map<string, AgentEvent>() };
    this.streams.set(batch.streamPath, target);
    for (const event of decision.events) {
      target.events.push(event);
      if (event.idempotencyKey !== undefined) target.keys.set(event.idempotencyKey, event);
    }
    const feedBatch: FeedBatch = { sequence: this.log.length + 1, streamPath: batch.streamPath, events: decision.events };
    this.log.push(feedBatch);
    for (const event of decision.events) this.deliver(event);
    const partition = this.partitionOf(batch.streamPath);
    for (const listener of this.feedListeners) if (listener.partitions.has(partition)) listener.queue.push(feedBatch);
    return { status: "committed", events: decision.events };
  }

  async read(streamPath: string, options?: ReadOptions): Promise<AgentEvent[]> {
    this.assertOpen();
    const path = parseStreamPath(streamPath);
    const { fromOffset, limit, maxBytes } = parseReadOptions(options);
    const events = this.streams.get(path)?.events ?? [];
    const end = limit === Number.POSITIVE_INFINITY ? events.length : fromOffset - 1 + limit;
    const budget = new PageBudget(maxBytes);
    const page: AgentEvent[] = [];
    for (const event of events.slice(fromOffset - 1, end)) {
      if (!budget.admit(event)) break;
      page.push(event);
    }
    return page;
  }

  async lastOffset(streamPath: string): Promise<number> {
    this.assertOpen();
    return this.streams.get(parseStreamPath(streamPath))?.events.length ?? 0;
  }

  async findKeyed(streamPath: string, key: string): Promise<AgentEvent | undefined> {
    this.assertOpen();
    return this.streams.get(parseStreamPath(streamPath))?.keys.get(key);
  }

  /** The memory store holds the streams themselves: there is no cache to drop. */
  forget(_streamPath: string): void {}

  /** Appends here never look anything up: there is nothing to hint. */
  appendHint(_streamPath: string): AppendHint {
    return {};
  }

  primeAppend(_streamPath: string, _hint: AppendHint): void {}

  subscribe(streamPath: string, options?: SubscribeOptions): Subscription {
    this.assertOpen();
    const path = parseStreamPath(streamPath);
    const { fromOffset } = parseReadOptions({ fromOffset: options?.fromOffset ?? 1 });
    const listener: Listener = {
      streamPath: path,
      ephemeral: options?.ephemeral === true,
      queue: new AsyncQueue<AgentEvent>(() => this.listeners.delete(listener)),
    };
    for (const event of this.streams.get(path)?.events.slice(fromOffset - 1) ?? []) listener.queue.push(event);
    this.listeners.add(listener);
    return subscriptionOf(listener.queue, () => this.listeners.delete(listener));
  }

  feed(options?: FeedOptions): FeedSubscription {
    this.assertOpen();
    const partitions = new Set(parsePartitions(options?.partitions, this.partitionCount));
    const after = options?.afterSequence ?? 0;
    const listener: FeedListener = { partitions, queue: new AsyncQueue<FeedBatch>(() => this.feedListeners.delete(listener)) };
    for (const batch of this.log.slice(Math.max(0, after))) {
      if (partitions.has(this.partitionOf(batch.streamPath))) listener.queue.push(batch);
    }
    this.feedListeners.add(listener);
    return subscriptionOf(listener.queue, () => this.feedListeners.delete(listener));
  }

  liveFeed(options?: LiveFeedOptions): LiveFeed {
    this.assertOpen();
    const partitions = new Set(parsePartitions(options?.partitions, this.partitionCount));
    const types = options?.types === undefined ? undefined : new Set(options.types);
    const listener: LiveListener = { partitions, types, queue: new AsyncQueue<AgentEvent>(() => this.liveListeners.delete(listener)) };
    this.liveListeners.add(listener);
    return subscriptionOf(listener.queue, () => this.liveListeners.delete(listener));
  }

  async listStreams(prefix?: string, options?: ListOptions): Promise<StreamSummary[]> {
    this.assertOpen();
    options?.signal?.throwIfAborted();
    const after = options?.after;
    return [...this.streams.entries()]
      .filter(([path]) => (prefix === undefined || path.startsWith(prefix)) && (after === undefined || path > after) && (options?.include?.(path) ?? true))
      .map(([streamPath, stream]) => ({ streamPath, lastOffset: stream.events.length }))
      .sort((a, b) => (a.streamPath < b.streamPath ? -1 : a.streamPath > b.streamPath ? 1 : 0))
      .slice(0, options?.limit ?? Number.POSITIVE_INFINITY);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const listener of this.listeners) listener.queue.end();
    for (const listener of this.feedListeners) listener.queue.end();
    for (const listener of this.liveListeners) listener.queue.end();
    this.listeners.clear();
    this.feedListeners.clear();
    this.liveListeners.clear();
  }

  private deliver(event: AgentEvent): void {
    for (const listener of this.listeners) {
      if (listener.streamPath !== event.streamPath) continue;
      if (event.ephemeral === true && !listener.ephemeral) continue;
      listener.queue.push(event);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("MemoryEventStore is closed");
  }
}

function subscriptionOf<T>(queue: AsyncQueue<T>, detach: () => void): AsyncIterable<T> & { close(): Promise<void> } {
  return {
    [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    async close() {
      detach();
      queue.end();
    },
  };
}
