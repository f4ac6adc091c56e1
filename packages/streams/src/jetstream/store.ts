// The JetStream adapter of the EventStore port. Layout (architecture.md): ONE JetStream stream
// (`AGENT_EVENTS`) for every agent; each agent stream is the subject
// `ev.<partition>.<path segments>` with partition = FNV-1a(path) mod partitionCount; ONE
// message per committed batch (atomic on 2.9, which has no batch publish), carrying the events
// and the offset of the first one. See writer.ts for appends, records.ts for reads,
// subscriptions.ts for live reading. The store does not own the connection: close() ends its
// subscriptions, the caller drains `nc`.

import { type AgentEvent, parseStreamPath } from "@agentrt/contract";
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type NatsConnection, headers as natsHeaders } from "@nats-io/nats-core";
import { PageBudget, ephemeralEvents, ephemeralEventsJson, knownLastOffsetOf, parsePartitions, parseReadOptions, prepareBatch } from "../batch.ts";
import {
  type AppendHint,
  type AppendOptions,
  type AppendResult,
  DEFAULT_MAX_EVENT_BYTES,
  type EventStore,
  type FeedOptions,
  type FeedSubscription,
  type ListOptions,
  type LiveFeed,
  type LiveFeedOptions,
  type ReadOptions,
  type StreamSummary,
  type SubscribeOptions,
  type Subscription,
} from "../event-store.ts";
import { partitionOfPath, validatePartitionCount } from "../partition.ts";
import type { UsageLedger } from "../stream-quota.ts";
import { classified } from "./errors.ts";
import { KeyIndex } from "./key-index.ts";
import { RecordReader, eventsOf, lastOffsetOf } from "./records.ts";
import { JetStreamPublisher } from "./publisher.ts";
import { DirectGets } from "./direct-get.ts";
import { ensureEventStream } from "./stream-setup.ts";
import { type Closable, type LiveEventsDropped, LivePartitionFeed, PartitionFeed, StreamSubscription } from "./subscriptions.ts";
import { LIVE_TYPES_HEADER, type SubjectScheme, durableSubject, ephemeralSubject, partitionOfSubject, pathOfSubject, prefixFilter } from "./subjects.ts";
import type { RecordSigning } from "./signing.ts";
import { BatchWriter } from "./writer.ts";

export interface JetStreamEventStoreOptions {
  /** Fixed per deployment; recorded in the stream and checked on open (default 64). */
  readonly partitionCount?: number;
  /** JetStream replicas of the events stream when it is created (default 1; 3 in a cluster). */
  readonly replicas?: number;
  readonly streamName?: string;
  /** Subject prefix of durable agent streams (default `ev`). */
  readonly subjectPrefix?: string;
  /** Subject prefix of the core-NATS live lane (default `eph`). */
  readonly ephemeralPrefix?: string;
  /**
   * Default "file". "memory" is for short tests only: on nats-server 2.9 a memory stream checks
   * `expect.lastSubjectSequence` by walking the stream, so appends slow down as it grows.
   */
  readonly storage?: "file" | "memory";
  /** Window for Nats-Msg-Id retry dedup (default 2 minutes). */
  readonly duplicateWindowMs?: number;
  /** Per-publish ack deadline (default 5 s). */
  readonly publishTimeoutMs?: number;
  /** Idle per-stream writer views kept (default 10 000). */
  readonly maxCachedStreams?: number;
  /** The commit clock; createdAt comes from here (default `() => new Date()`). */
  readonly now?: () => Date;
  /** KV bucket of idempotency-key reservations (default `<streamName>_KEYS`; see key-index.ts). */
  readonly keyIndexBucket?: string;
  /** Largest event JSON an append accepts, checked before publishing (default DEFAULT_MAX_EVENT_BYTES). */
  readonly maxEventBytes?: number;
  /** Signing what it publishes and checking what it reads (signing.ts; default neither). */
  readonly signing?: RecordSigning;
  /** Told once per live subscription, at the first live-lane event it drops (subscriptions.ts, HELD_LIVE_MAX_EVENTS): to be logged. */
  readonly onLiveEventsDropped?: (dropped: LiveEventsDropped) => void;
}

const encoder = new TextEncoder();
/** How long a publish waits for JetStream's ack by default (`publishTimeoutMs`). */
export const DEFAULT_PUBLISH_TIMEOUT_MS = 5_000;
/** Last records fetched at once by a listing (each at most one batch, MAX_BATCH_BYTES). */
const LIST_PARALLEL_GETS = 4;

export class JetStreamEventStore implements EventStore {
  readonly partitionCount: number;
  readonly streamName: string;
  private readonly scheme: SubjectScheme;
  private readonly reader: RecordReader;
  private readonly writer: BatchWriter;
  private readonly publisher: JetStreamPublisher;
  private readonly open = new Set<Closable>();
  private readonly now: () => Date;
  private readonly maxEventBytes: number;
  private readonly onLiveEventsDropped: JetStreamEventStoreOptions["onLiveEventsDropped"];
  /** Where stream quotas keep their counted usage (`StreamQuota`), shared by every process: entries of the key index's bucket. */
  readonly usageLedger: UsageLedger;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    jsm: JetStreamManager,
    options: Required<Pick<JetStreamEventStoreOptions, "partitionCount" | "streamName" | "publishTimeoutMs" | "maxCachedStreams" | "now" | "maxEventBytes" | "signing">> & {
      scheme: SubjectScheme;
      consistentReads: boolean;
      index: KeyIndex;
      publisher: JetStreamPublisher;
      onLiveEventsDropped: JetStreamEventStoreOptions["onLiveEventsDropped"];
    },
  ) {
    this.onLiveEventsDropped = options.onLiveEventsDropped;
    this.partitionCount = options.partitionCount;
    this.streamName = options.streamName;
    this.scheme = options.scheme;
    this.now = options.now;
    this.maxEventBytes = options.maxEventBytes;
    this.usageLedger = options.index.usageLedger;
    this.reader = new RecordReader(jsm, js, this.streamName, options.consistentReads, undefined, undefined, new DirectGets(options.publisher.requests), options.signing, (subject) =>
      pathOfSubject(this.scheme, subject),
    );
    this.publisher = options.publisher;
    this.writer = new BatchWriter({
      publisher: this.publisher,
      reader: this.reader,
      index: options.index,
      now: options.now,
      maxCachedStreams: options.maxCachedStreams,
      maxAttempts: 200,
      ...(options.signing.signer === undefined ? {} : { signer: options.signing.signer }),
    });
  }

  /** Connects the store to `nc`, creating the events stream if it does not exist (or validating it). */
  static async open(nc: NatsConnection, options: JetStreamEventStoreOptions = {}): Promise<JetStreamEventStore> {
    const partitionCount = validatePartitionCount(options.partitionCount ?? 64);
    const streamName = options.streamName ?? "AGENT_EVENTS";
    const scheme = { durablePrefix: options.subjectPrefix ?? "ev", ephemeralPrefix: options.ephemeralPrefix ?? "eph" };
    const publishTimeoutMs = options.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS;
    return await classified(`open event store ${streamName}`, async () => {
      const jsm = await jetstreamManager(nc, { timeout: publishTimeoutMs });
      await ensureEventStream(jsm, {
        streamName,
        scheme,
        partitionCount,
        replicas: options.replicas ?? 1,
        storage: options.storage ?? "file",
        duplicateWindowMs: options.duplicateWindowMs ?? 120_000,
      });
      const js = jetstream(nc, { timeout: publishTimeoutMs });
      // Whatever this opener asked for, the stream as it exists decides: a replicated stream
      // is read through its leader so an acknowledged event is never missed.
      const replicas = (await jsm.streams.info(streamName)).config.num_replicas;
      const replicated = replicas > 1;
      const publisher = new JetStreamPublisher(nc, publishTimeoutMs);
      const index = await KeyIndex.open(js, publisher, options.keyIndexBucket ?? `${streamName}_KEYS`, replicas).catch((error: unknown) => {
        publisher.close();
        throw error;
      });
      return new JetStreamEventStore(nc, js, jsm, {
        index,
        publisher,
        consistentReads: replicated,
        partitionCount,
        streamName,
        scheme,
        publishTimeoutMs,
        maxCachedStreams: options.maxCachedStreams ?? 10_000,
        now: options.now ?? (() => new Date()),
        maxEventBytes: options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES,
        signing: options.signing ?? {},
        onLiveEventsDropped: options.onLiveEventsDropped,
      });
    });
  }

  partitionOf(streamPath: string): number {
    return partitionOfPath(parseStreamPath(streamPath), this.partitionCount);
  }

  /**
   * The core-NATS subject this stream's live-lane events are published on (for tools that
   * watch NATS, and tests that count what the lane carried).
   */
  liveSubjectOf(streamPath: string): string {
    const path = parseStreamPath(streamPath);
    return ephemeralSubject(this.scheme, partitionOfPath(path, this.partitionCount), path);
  }

  /** The subject this stream's records are stored on (for tools that inspect the stream, and tests that write to it as another writer would). */
  subjectOf(streamPath: string): string {
    return durableSubject(this.scheme, partitionOfPath(streamPath, this.partitionCount), streamPath);
  }

  async append(streamPath: string, events: readonly unknown[], options?: AppendOptions): Promise<AppendResult> {
    const batch = prepareBatch(streamPath, events, this.maxEventBytes);
    const subject = this.subjectOf(batch.streamPath);
    if (!batch.ephemeral) return await this.writer.append(subject, batch, options);
    // Live lane: never stored. Each event carries the stream's last durable offset at publish time.
    return await classified(`publish live events on ${batch.streamPath}`, async () => {
      const known = knownLastOffsetOf(options);
      const last = known === undefined ? await this.reader.last(subject) : undefined;
      const offset = known ?? (last === undefined ? 0 : lastOffsetOf(last));
      const createdAt = this.now().toISOString();
      const live = ephemeralEvents(batch, offset, createdAt);
      const partition = partitionOfPath(batch.streamPath, this.partitionCount);
      const types = natsHeaders();
      types.set(LIVE_TYPES_HEADER, [...new Set(live.map((e) => e.type))].join(","));
      this.nc.publish(ephemeralSubject(this.scheme, partition, batch.streamPath), encoder.encode(ephemeralEventsJson(batch, offset, createdAt)), { headers: types });
      return { status: "committed", events: live };
    });
  }

  async read(streamPath: string, options?: ReadOptions): Promise<AgentEvent[]> {
    const path = parseStreamPath(streamPath);
    const { fromOffset, limit, maxBytes } = parseReadOptions(options);
    const signal = options?.signal;
    if (limit === 0) return [];
    const subject = this.subjectOf(path);
    return await classified(`read ${path}`, async () => {
      const located = await this.reader.locate(subject, fromOffset);
      signal?.throwIfAborted();
      if (located === undefined) return [];
      const out: AgentEvent[] = [];
      const budget = new PageBudget(maxBytes);
      let full = false;
      const wanted = Math.min(limit, lastOffsetOf(located.last) - fromOffset + 1);
      // Batch sizes vary; the last batch's size is a fair guess at how many records to fetch,
      // and its byte size at how many fit in the page's byte budget.
      const byCount = Number.isFinite(wanted) ? Math.ceil(wanted / Math.max(1, located.last.count)) + 1 : Number.POSITIVE_INFINITY;
      const byBytes = Number.isFinite(maxBytes) ? Math.ceil(maxBytes / Math.max(1, located.last.data.length)) + 1 : Number.POSITIVE_INFINITY;
      const expectedRecords = Math.min(byCount, byBytes);
      // The next offset to take: offsets are dense, so exactly that one is taken, and a record
      // delivered twice can neither repeat an event nor push the end of the range out of the
      // result. An offset whose event this version cannot read (a newer writer's type or field)
      // is passed over within the record that holds it: readers skip such events, and waiting
      // for it had ended every read of the stream there, for good (red-team).
      let next = fromOffset;
      for await (const record of this.reader.scanLocated(subject, located, expectedRecords, signal)) {
        const recordLast = lastOffsetOf(record);
        if (recordLast < next) continue;
        // Only a record that holds `next` may move it: one beyond it leaves a gap, not a skip.
        if (record.first > next) continue;
        for (const event of eventsOf(record)) {
          if (event.offset < next || out.length >= wanted) continue;
          // A one-event record's size is its event's plus a small envelope: no need to encode it again.
          if (!budget.admit(event, record.count === 1 ? record.data.length : undefined)) {
            full = true;
            break;
          }
          out.push(event);
          next = event.offset + 1;
        }
        if (full || out.length >= wanted) break;
        next = recordLast + 1;
      }
      // A read through the stream's end gives the writer its view (services read a stream,
      // then append to it, e.g. the host's started and settled events).
      const end = lastOffsetOf(located.last);
      if (next > end) this.writer.warm(path, subject, { lastOffset: end, lastSeq: located.last.seq });
      return out;
    }, signal);
  }

  async findKeyed(streamPath: string, key: string): Promise<AgentEvent | undefined> {
    const path = parseStreamPath(streamPath);
    return await classified(`look up key ${JSON.stringify(key)} on ${path}`, () => this.writer.findKeyed(path, this.subjectOf(path), key));
  }

  forget(streamPath: string): void {
    this.writer.forget(streamPath);
  }

  appendHint(streamPath: string): AppendHint {
    return this.writer.hint(streamPath);
  }

  primeAppend(streamPath: string, hint: AppendHint): void {
    const path = parseStreamPath(streamPath);
    this.writer.prime(path, this.subjectOf(path), hint);
  }

  /** How many streams' writer views this client holds (tests of what an evicted agent leaves behind). */
  get cachedStreams(): number {
    return this.writer.cachedStreams;
  }

  async lastOffset(streamPath: string): Promise<number> {
    const subject = this.subjectOf(parseStreamPath(streamPath));
    return await classified(`last offset of ${streamPath}`, async () => {
      const last = await this.reader.last(subject);
      return last === undefined ? 0 : lastOffsetOf(last);
    });
  }

  subscribe(streamPath: string, options?: SubscribeOptions): Subscription {
    const path = parseStreamPath(streamPath);
    const { fromOffset } = parseReadOptions({ fromOffset: options?.fromOffset ?? 1 });
    const partition = partitionOfPath(path, this.partitionCount);
    const subscription = new StreamSubscription(
      {
        nc: this.nc,
        js: this.js,
        reader: this.reader,
        streamName: this.streamName,
        subject: durableSubject(this.scheme, partition, path),
        ephemeralSubject: options?.ephemeral === true ? ephemeralSubject(this.scheme, partition, path) : undefined,
        fromOffset,
        ...(this.onLiveEventsDropped === undefined ? {} : { onLiveDropped: this.onLiveEventsDropped }),
      },
      (self) => this.open.delete(self),
    );
    this.open.add(subscription);
    return subscription;
  }

  feed(options?: FeedOptions): FeedSubscription {
    const partitions = parsePartitions(options?.partitions, this.partitionCount);
    const afterSequence = options?.afterSequence ?? 0;
    const wanted = new Set(partitions);
    const single = partitions.length === 1 ? partitions[0] : undefined;
    const feed = new PartitionFeed(
      {
        js: this.js,
        reader: this.reader,
        streamName: this.streamName,
        filter: single === undefined ? `${this.scheme.durablePrefix}.>` : `${this.scheme.durablePrefix}.${single}.>`,
        afterSequence,
        accept: (subject) => (wanted.has(partitionOfSubject(subject)) ? pathOfSubject(this.scheme, subject) : undefined),
      },
      (self) => this.open.delete(self),
    );
    this.open.add(feed);
    const writer = this.writer;
    const subjectOf = (path: string) => this.subjectOf(path);
    return {
      close: () => feed.close(),
      async *[Symbol.asyncIterator]() {
        for await (const batch of feed) {
          writer.observe(batch.streamPath, subjectOf, batch.sequence, batch.events);
          yield batch;
        }
      },
    };
  }

  liveFeed(options?: LiveFeedOptions): LiveFeed {
    const partitions = parsePartitions(options?.partitions, this.partitionCount);
    const prefix = this.scheme.ephemeralPrefix;
    const subjects = partitions.length === this.partitionCount ? [`${prefix}.>`] : partitions.map((p) => `${prefix}.${p}.>`);
    const types = options?.types === undefined ? undefined : new Set(options.types);
    const feed = new LivePartitionFeed(this.nc, subjects, types, (self) => this.open.delete(self));
    this.open.add(feed);
    return feed;
  }

  async listStreams(prefix?: string, options?: ListOptions): Promise<StreamSummary[]> {
    const signal = options?.signal;
    const after = options?.after;
    return await classified("list streams", async () => {
      signal?.throwIfAborted();
      const jsm = await jetstreamManager(this.nc, { checkAPI: false });
      const info = await jsm.streams.info(this.streamName, { subjects_filter: prefixFilter(this.scheme, prefix) });
      const paths = Object.keys(info.state.subjects ?? {})
        .map((subject) => ({ subject, streamPath: pathOfSubject(this.scheme, subject) }))
        .filter(
          (s): s is { subject: string; streamPath: string } =>
            s.streamPath !== undefined &&
            (prefix === undefined || s.streamPath.startsWith(prefix)) &&
            (after === undefined || s.streamPath > after) &&
            (options?.include?.(s.streamPath) ?? true),
        )
        .sort((a, b) => (a.streamPath < b.streamPath ? -1 : a.streamPath > b.streamPath ? 1 : 0))
        .slice(0, options?.limit ?? Number.POSITIVE_INFINITY);
      // Each last record may be large (up to a whole batch): a few at a time keeps the bytes
      // in flight bounded whatever the prefix matches.
      const summaries: StreamSummary[] = [];
      for (let i = 0; i < paths.length; i += LIST_PARALLEL_GETS) {
        signal?.throwIfAborted();
        const chunk = await Promise.all(
          paths.slice(i, i + LIST_PARALLEL_GETS).map(async ({ subject, streamPath }) => {
            const last = await this.reader.last(subject);
            return { streamPath, lastOffset: last === undefined ? 0 : lastOffsetOf(last) };
          }),
        );
        summaries.push(...chunk.filter((s) => s.lastOffset > 0));
      }
      return summaries;
    }, signal);
  }

  async close(): Promise<void> {
    await Promise.all([...this.open].map((s) => s.close()));
    this.publisher.close();
  }
}
