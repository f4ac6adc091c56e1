// The event store port. Two adapters implement it — JetStream (`JetStreamEventStore`) and
// in-memory (`MemoryEventStore`, for pure unit tests) — and both pass the same shared suite.
//
// Guarantees (architecture.md): dense per-stream offsets from 1; a batch commits atomically,
// in order, with consecutive offsets and nothing interleaved; an idempotency key is unique per
// stream forever; createdAt is stamped by the store; reads and live subscriptions start at
// any offset with no gap or duplicate at the switch from history to live; ephemeral events
// (the live lane) reach live subscribers only and never touch storage.

import type { AgentEvent } from "@agentrt/contract";

/** The most events one append may carry, and the most encoded bytes one batch may take. */
export const MAX_BATCH_EVENTS = 1000;
export const MAX_BATCH_BYTES = 900_000;
/**
 * Default bound on one event's JSON (type, payload, key). A store opened with a lower
 * `maxEventBytes` refuses more; a batch is also bounded by MAX_BATCH_BYTES as one message.
 */
export const DEFAULT_MAX_EVENT_BYTES = 1_048_576;
/** Default bound on the events' JSON one read page returns (the gateway's page size). */
export const DEFAULT_MAX_READ_BYTES = 4 * 1_048_576;

export interface AppendOptions {
  /**
   * Optimistic concurrency: commit only if the stream's last durable offset is exactly this
   * (0 for an empty stream). A mismatch throws `conflict`.
   */
  readonly expectedLastOffset?: number;
  /**
   * Ephemeral batches only: the stream's last durable offset as the caller has already seen it
   * (a driver through its request, a reducer through what it folded). The live events carry it
   * and the store does not look the stream's last record up: one round trip less per live
   * event. Without it the store reads the last offset itself.
   */
  readonly knownLastOffset?: number;
  /**
   * With `expectedLastOffset` only: the caller vouches that none of the batch's idempotency keys
   * is on the stream through `expectedLastOffset` — it decided the batch from its own fold of
   * exactly those events and never decides a key that fold holds — and that these keys are only
   * ever appended that way, by anyone (the reducer's head decisions). A store with a key index
   * then sends the keys' reservations together with the publish instead of before it (one round
   * trip less); the publish's expected-last-sequence check still lets it commit only onto the
   * stream the caller folded. A reservation left by an earlier attempt that lost is pointed at
   * the committed record before the append resolves; until then a writer trusting the index
   * could take the key for free, hence the second condition. A stream that has moved past
   * `expectedLastOffset` answers `conflict` without looking the keys up, even when the newer
   * records carry them (another store may answer `duplicate`): the caller decides again from
   * those records, and its fold then holds the keys.
   */
  readonly keysNewAtHead?: boolean;
}

/**
 * `committed`: the whole batch was written; `events` are the new events with their offsets.
 * `duplicate`: at least one event's idempotency key already existed on the stream, so NOTHING
 * of the batch was written (a keyed batch is all-or-nothing, which is what lets a zombie's
 * late settlement batch collapse entirely); `events` are the stored originals of the keys
 * that matched, in batch order.
 */
export type AppendResult =
  | { readonly status: "committed"; readonly events: readonly AgentEvent[] }
  | { readonly status: "duplicate"; readonly events: readonly AgentEvent[] };

export interface ReadOptions {
  /** First offset to return (default 1). */
  readonly fromOffset?: number;
  /** The most events to return (default: all). */
  readonly limit?: number;
  /**
   * Stop before the event whose JSON would take the page past this many bytes (default: no
   * bound). At least one event is returned, so `last offset + 1` always makes progress.
   */
  readonly maxBytes?: number;
  /** Stops the read (rejecting with the signal's reason) and its pulls from the broker when aborted. */
  readonly signal?: AbortSignal;
}

export interface ListOptions {
  /** Only streams whose path sorts after this one (a listing's continuation). */
  readonly after?: string;
  /** The most streams to return (default: all). */
  readonly limit?: number;
  /** Only streams this accepts (e.g. what a caller may read); checked before any stream is read. */
  readonly include?: (streamPath: string) => boolean;
  /** Stops the listing when aborted (a client that went away). */
  readonly signal?: AbortSignal;
}

export interface SubscribeOptions {
  /** First durable offset to deliver (default 1). History is replayed, then live events follow. */
  readonly fromOffset?: number;
  /** Also deliver live-lane (ephemeral) events published while subscribed. Default false. */
  readonly ephemeral?: boolean;
}

/** A live subscription: iterate it; `close()` ends the iteration. */
export interface Subscription extends AsyncIterable<AgentEvent> {
  close(): Promise<void>;
}

/** One committed batch as seen on the partition feed (what reducers fold). */
export interface FeedBatch {
  /** Monotonic position of this batch in the store (JetStream sequence), for resuming. */
  readonly sequence: number;
  readonly streamPath: string;
  readonly events: readonly AgentEvent[];
  /** The stored record's size in bytes, when the store has it at hand (a cache counts it instead of encoding the events again). */
  readonly bytes?: number;
  /**
   * The offsets the record holds, when the store knows them: more than `events` when some of
   * its events are of a type or shape this version cannot read (a newer writer's), which a
   * reader passes over rather than taking for a gap.
   */
  readonly offsets?: { readonly first: number; readonly last: number };
}

/** The offsets a feed batch's record holds: the store's when it gave them, else its events' (undefined: none). */
export function offsetsOfBatch(batch: Pick<FeedBatch, "events" | "offsets">): { readonly first: number; readonly last: number } | undefined {
  if (batch.offsets !== undefined) return batch.offsets;
  const [first, last] = [batch.events[0], batch.events.at(-1)];
  return first === undefined || last === undefined ? undefined : { first: first.offset, last: last.offset };
}

export interface FeedOptions {
  /** Partitions to follow; default every partition. */
  readonly partitions?: readonly number[];
  /** Resume after this feed sequence (default 0: from the beginning). */
  readonly afterSequence?: number;
}

export interface FeedSubscription extends AsyncIterable<FeedBatch> {
  close(): Promise<void>;
}

export interface LiveFeedOptions {
  /** Partitions to follow; default every partition. */
  readonly partitions?: readonly number[];
  /**
   * Only these event types (default: every type). Others are dropped before they are validated:
   * a follower that reacts to one type (the reducer to reply chunks) does not parse the rest
   * of the lane, its own runtime changes and previews among them.
   */
  readonly types?: readonly string[];
}

/** Live-lane events as they are published: iterate it; `close()` ends the iteration. */
export interface LiveFeed extends AsyncIterable<AgentEvent> {
  close(): Promise<void>;
}

/** See `EventStore.appendHint`; every field is optional knowledge. */
export interface AppendHint {
  /** A record of the stream: its feed sequence and the offset of its last event. */
  readonly record?: { readonly sequence: number; readonly lastOffset: number };
  /** Every idempotency key of the stream's history is in the store's key index (it stays so). */
  readonly keysIndexed?: boolean;
}

export interface StreamSummary {
  readonly streamPath: string;
  readonly lastOffset: number;
}

export interface EventStore {
  /** The fixed number of partitions stream paths hash into. */
  readonly partitionCount: number;
  partitionOf(streamPath: string): number;

  /**
   * Validates and appends a batch (see `AppendResult`). Throws a ContractViolationError for an
   * invalid payload, unknown type, bad path, ephemeral misuse, an oversized event or batch, having
   * committed nothing. A batch of live-lane events is published, not stored.
   */
  append(streamPath: string, events: readonly unknown[], options?: AppendOptions): Promise<AppendResult>;

  /** Durable events from `fromOffset`, in offset order (never ephemeral ones). */
  read(streamPath: string, options?: ReadOptions): Promise<AgentEvent[]>;

  /** The last durable offset of a stream (0 when empty). */
  lastOffset(streamPath: string): Promise<number>;

  /**
   * The committed event carrying idempotency key `key` on the stream, or undefined: a look-up in
   * the key index and a read of the one record it names, never a read of the stream (the keys of
   * a stream written before the index are recorded once first, as a keyed append does). Keys
   * that only ride with a settlement key (`settlementKeyRiddenBy`) have no entry of their own:
   * look up the settlement's.
   */
  findKeyed(streamPath: string, key: string): Promise<AgentEvent | undefined>;

  /**
   * Drops what this client caches about a stream for its next append (a writer's view of its
   * end), when the caller will not append to it for a while: a service holding nothing per
   * idle stream. Only a cache: the next append looks the stream up again.
   */
  forget(streamPath: string): void;

  /**
   * What this client has learned about a stream that spares its next append a look-up, for a
   * caller that keeps it with its own state across a `forget` (the reducer's agent snapshot).
   */
  appendHint(streamPath: string): AppendHint;

  /**
   * Gives this client such knowledge back, or a record of the stream the caller saw on the
   * feed, so the next append needs no look-up of its own. Only ever adds to what the client
   * knows; a record older than the stream's end costs a catch-up, never a wrong append.
   */
  primeAppend(streamPath: string, hint: AppendHint): void;

  /** History from `fromOffset` then live events, each offset exactly once and in order. */
  subscribe(streamPath: string, options?: SubscribeOptions): Subscription;

  /** Every committed batch of the chosen partitions, in commit order, then live. */
  feed(options?: FeedOptions): FeedSubscription;

  /**
   * Live-lane (ephemeral) events of every stream in the chosen partitions, from now on, as they
   * are published. No history and best effort, like the live lane itself: what is published
   * while nobody listens is gone. For a service reacting to the live lane of the streams it
   * owns (the reducer's reply previews).
   */
  liveFeed(options?: LiveFeedOptions): LiveFeed;

  /**
   * Streams that have at least one durable event, optionally under a path prefix, sorted by
   * path; `options` pages through them (`after`, `limit`) and filters them (`include`).
   */
  listStreams(prefix?: string, options?: ListOptions): Promise<StreamSummary[]>;

  close(): Promise<void>;
}
