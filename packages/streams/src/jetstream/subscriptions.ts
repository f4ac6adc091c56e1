// Live reading: `subscribe` replays a stream's history and continues live through ONE ordered
// consumer on the stream's subject, started at the batch holding `fromOffset` (found by binary
// search), so there is no gap at the switch; events below the next expected offset are
// dropped, so there is no duplicate either. Live-lane events come from a core subscription
// opened BEFORE history is read, and are held back until the durable offset they follow has
// been delivered, so a subscriber sees them where they happened; how many are held is bounded
// (HELD_LIVE_MAX_EVENTS), since whoever may publish on the live lane names those offsets.

import { type AgentEvent, AgentRuntimeError, parseStoredEvent } from "@agentrt/contract";
import { type ConsumerMessages, DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import type { Msg, NatsConnection, Subscription as CoreSubscription } from "@nats-io/nats-core";
import { AsyncQueue } from "../async-queue.ts";
import { type FeedBatch, MAX_BATCH_EVENTS } from "../event-store.ts";
import { classifyNatsError } from "./errors.ts";
import { type RawMsg, type RecordReader, type StoredRecord, eventsOf, lastOffsetOf } from "./records.ts";
import { LIVE_TYPES_HEADER } from "./subjects.ts";

const decoder = new TextDecoder();

/** Something with a lifetime the store ends on close(). */
export interface Closable {
  close(): Promise<void>;
}

interface ConsumerSpec {
  readonly js: JetStreamClient;
  readonly streamName: string;
  readonly filter: string;
  /** 0 = from the first message matching the filter. */
  readonly startSeq: number;
}

/**
 * A pull expires after this long; the server heartbeats every half of it while a pull waits,
 * and two missed heartbeats (4 s of silence from the consumer) count as a silent consumer,
 * replaced from the next sequence. A consumer on a NATS node that died says nothing: at 10 s a
 * pull (20 s before the watchdog judged), every feed held there stopped that long after each
 * node kill, and in the chaos soak no turn completed for 30 s (seed 155816: 50 turns slower than
 * 30 s, all answered 20 s after the last fault; at 4 s, 6 turns and 3 s). An idle consumer asks
 * the server for messages once per pull: once every 4 s.
 */
const CONSUME_EXPIRES_MS = 4_000;

/**
 * Messages a consumer asks for at once (and so at most holds before its subscriber takes them):
 * records are up to ~1 MiB, so 512 could hold half a gigabyte per consumer, and a reducer runs
 * one per partition.
 */
const PULL_MESSAGES = 64;

/**
 * A subscriber's backlog: past this many items (or bytes of their records) waiting for it, its
 * consumer takes no more messages until the subscriber has taken half. Without it a subscriber
 * slower than the stream (a reducer catching up on a large backlog) had the whole backlog read
 * into its queue.
 */
export const BACKLOG_MAX_ITEMS = 1_024;
export const BACKLOG_MAX_BYTES = 8 * 1024 * 1024;

/**
 * How long a consumer waits in place for room. A longer wait stops it (the library would go on
 * asking for messages on every missed heartbeat) and makes a new one from the next sequence
 * once there is room.
 */
const PAUSE_IN_PLACE_MS = 5_000;

/**
 * Runs an ordered consumer until closed, handing each message to `onMessage`, which returns a
 * promise when its subscriber has no room: no further message is taken until it settles. A
 * consumer that goes silent is replaced by a fresh one from the next sequence: the client
 * library's own recovery of an ordered consumer was seen to stall for good (no message, no
 * error, no end) after the node holding it was killed and restarted (the chaos soak, issue 16).
 */
async function runConsumer(
  spec: ConsumerSpec,
  isClosed: () => boolean,
  onStarted: (messages: ConsumerMessages, remove: () => Promise<void>) => void,
  onMessage: (msg: RawMsg) => Promise<void> | undefined,
): Promise<void> {
  let startSeq = spec.startSeq;
  for (;;) {
    const consumer = await spec.js.consumers.get(spec.streamName, {
      filter_subjects: spec.filter,
      ...(startSeq > 0 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: startSeq } : { deliver_policy: DeliverPolicy.All }),
    });
    const messages = await consumer.consume({ max_messages: PULL_MESSAGES, expires: CONSUME_EXPIRES_MS });
    const remove = () => consumer.delete().then(() => undefined, () => undefined);
    onStarted(messages, remove);
    if (isClosed()) return;
    let silent = false;
    let paused = false;
    let lastSign = Date.now();
    const goneSilent = (): void => {
      if (silent) return;
      silent = true;
      clearInterval(watchdog);
      messages.stop();
    };
    // A consumer waiting for room says nothing: that is not silence.
    void watchStatus(messages, (type) => {
      lastSign = Date.now();
      if (type === "heartbeats_missed" && !paused) goneSilent();
    });
    // The library reports missed heartbeats only while its monitor runs, and it cancels the
    // monitor while it recreates an ordered consumer: a recreation that keeps failing (the
    // node holding the stream's leader killed) left a partition's feed silent for good, with no
    // message, status or end (the NATS-leader chaos test: an agent's message never folded).
    // So silence is also judged here, from anything the consumer says.
    const watchdog = setInterval(() => {
      if (!paused && Date.now() - lastSign > SILENCE_MS) goneSilent();
    }, 1_000);
    watchdog.unref();
    let untilRoom: Promise<void> | undefined;
    try {
      for await (const msg of messages) {
        lastSign = Date.now();
        startSeq = msg.seq + 1;
        const room = onMessage(msg);
        if (room !== undefined) {
          paused = true;
          if (!(await settlesWithin(room, PAUSE_IN_PLACE_MS))) {
            untilRoom = room;
            break;
          }
          paused = false;
          lastSign = Date.now();
        }
        if (isClosed()) return;
      }
    } finally {
      clearInterval(watchdog);
    }
    if (untilRoom !== undefined) {
      // Made again from the next sequence once the subscriber has taken half its backlog.
      messages.stop();
      void remove();
      await untilRoom;
      if (isClosed()) return;
      continue;
    }
    if (!silent || isClosed()) return;
    void remove();
  }
}

async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * With a pull always waiting, the server heartbeats every half of CONSUME_EXPIRES_MS; this much
 * time without a message, a heartbeat or any other status means the consumer is gone silent.
 */
const SILENCE_MS = 4 * (CONSUME_EXPIRES_MS / 2);

/** Records a subscription may have in hand, read but not yet delivered (a gap being read first). */
const CHAINED_MAX = 64;

async function watchStatus(messages: ConsumerMessages, onStatus: (type: string) => void): Promise<void> {
  for await (const status of messages.status()) onStatus(status.type);
}

abstract class ConsumerSubscription<T> implements Closable, AsyncIterable<T> {
  protected readonly queue = new AsyncQueue<T>(() => void this.close());
  protected closed = false;
  private messages: ConsumerMessages | undefined;
  private removeConsumer: (() => Promise<void>) | undefined;
  private readonly detach: (self: Closable) => void;

  constructor(detach: (self: Closable) => void) {
    this.detach = detach;
  }

  /** Runs the consumer; an end the subscriber did not ask for is reported as `unavailable`. */
  protected launch(run: () => Promise<void>, what: string): void {
    run().then(
      () =>
        this.queue.end(
          this.closed ? undefined : new AgentRuntimeError("unavailable", `${what}: the consumer stopped (connection closed or stream gone); subscribe again.`, { retryable: true }),
        ),
      (error: unknown) => this.queue.end(this.closed ? undefined : classifyNatsError(error, what)),
    );
  }

  /** True while the subscriber's backlog is under its bounds. */
  protected hasRoom(): boolean {
    return this.queue.size < BACKLOG_MAX_ITEMS && this.queue.weight < BACKLOG_MAX_BYTES;
  }

  /** Settles once the subscriber has taken half its backlog (or the queue ended). */
  protected room(): Promise<void> {
    return this.queue.below(BACKLOG_MAX_ITEMS / 2, BACKLOG_MAX_BYTES / 2);
  }

  protected consume(spec: ConsumerSpec, onMessage: Parameters<typeof runConsumer>[3]): Promise<void> {
    return runConsumer(
      spec,
      () => this.closed,
      (messages, remove) => {
        this.messages = messages;
        this.removeConsumer = remove;
        if (this.closed) void this.stopConsumer();
      },
      onMessage,
    );
  }

  private async stopConsumer(): Promise<void> {
    const messages = this.messages;
    const remove = this.removeConsumer;
    this.messages = undefined;
    this.removeConsumer = undefined;
    messages?.stop();
    await remove?.();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.detach(this);
    this.onClose();
    await this.stopConsumer();
    this.queue.end();
  }

  protected onClose(): void {}

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return this.queue[Symbol.asyncIterator]();
  }
}

/**
 * Live-lane events a subscription holds back, waiting for the durable offset they follow: past
 * this many, or this many bytes of them, the one farthest ahead is dropped. Every service's NATS
 * user may publish on the live lane and names the offset an event follows: the driver's user
 * sent 300 events of 800 KB following offset 10^9 to an agent a client followed live, and the
 * gateway held them all (131 MB → 413 MB, growing for as long as they came).
 */
export const HELD_LIVE_MAX_EVENTS = 1_024;
export const HELD_LIVE_MAX_BYTES = 8 * 1024 * 1024;

/**
 * How far past the durable end this subscription has seen a live event may follow and still be
 * held. Its publisher follows the offset it knew when it published, which this subscription's
 * consumer brings a moment later: a few records in flight, each of at most MAX_BATCH_EVENTS.
 * One further ahead names an offset the stream has not reached: it is dropped on arrival. (A
 * subscriber so far behind that the stream moved on that much meanwhile misses live events,
 * which are never stored anyway; the durable events that follow them carry what they showed.)
 */
export const LIVE_AHEAD_MAX_OFFSETS = 4 * MAX_BATCH_EVENTS;

/** Live events dropped by a subscription, reported once per subscription (the first drop). */
export interface LiveEventsDropped {
  readonly subject: string;
  /** `ahead`: it followed an offset implausibly far past the durable end; `bound`: more were held than the bounds allow. */
  readonly reason: "ahead" | "bound";
  /** The offset the first dropped event followed. */
  readonly offset: number;
  /** The durable end this subscription had seen (undefined: not known yet). */
  readonly durableEnd: number | undefined;
}

export interface StreamSubscriptionSpec {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly reader: RecordReader;
  readonly streamName: string;
  readonly subject: string;
  readonly ephemeralSubject: string | undefined;
  readonly fromOffset: number;
  /** Told once, at the first live event this subscription drops (to be logged). */
  readonly onLiveDropped?: (dropped: LiveEventsDropped) => void;
}

interface HeldLiveEvent {
  readonly event: AgentEvent;
  readonly bytes: number;
}

export class StreamSubscription extends ConsumerSubscription<AgentEvent> {
  private nextOffset: number;
  /** Live-lane events waiting for their durable offset, in arrival order. */
  private heldEphemeral: HeldLiveEvent[] = [];
  private heldBytes = 0;
  /** The newest durable offset this subscription knows the stream holds (undefined: not known yet). */
  private durableEnd: number | undefined;
  private droppedLive = 0;
  private core: CoreSubscription | undefined;
  private readonly onLiveDropped: ((dropped: LiveEventsDropped) => void) | undefined;
  private readonly subject: string;

  constructor(spec: StreamSubscriptionSpec, detach: (self: Closable) => void) {
    super(detach);
    this.nextOffset = spec.fromOffset;
    this.subject = spec.subject;
    this.onLiveDropped = spec.onLiveDropped;
    if (spec.ephemeralSubject !== undefined) {
      // Opened before history is read: live-lane events published from now on are not missed.
      this.core = spec.nc.subscribe(spec.ephemeralSubject, {
        // A refused subscription calls back with an error and no message.
        callback: (error, msg) => {
          if (error === null) this.onEphemeral(msg.data);
        },
      });
    }
    this.launch(() => this.run(spec), `subscribe to ${spec.subject}`);
  }

  private async run(spec: StreamSubscriptionSpec): Promise<void> {
    const located = await spec.reader.locate(spec.subject, spec.fromOffset);
    let startSeq = located?.startSeq ?? 0;
    let end = located === undefined ? undefined : lastOffsetOf(located.last);
    if (located === undefined) {
      // `fromOffset` was past the end when located; the batch holding it may have been
      // committed since, and then it IS the last record. Starting AT the last record (not
      // after it) cannot miss it, and offsets below `fromOffset` are dropped below.
      const last = await spec.reader.last(spec.subject);
      startSeq = last === undefined ? 0 : last.seq;
      end = last === undefined ? 0 : lastOffsetOf(last);
    }
    this.sawDurableEnd(end);
    if (this.closed) return;
    await this.consume({ js: spec.js, streamName: spec.streamName, filter: spec.subject, startSeq }, (msg) => {
      const record = spec.reader.recordOf(msg);
      if (record === undefined) return undefined;
      this.sawDurableEnd(lastOffsetOf(record));
      // Records are delivered one after another, in order, even when a gap must be read first.
      this.chained++;
      this.delivering = this.delivering
        .then(() => this.deliver(spec, record))
        .catch((error: unknown) => this.queue.end(classifyNatsError(error, `subscribe to ${spec.subject}`)))
        .finally(() => this.chained--);
      if (this.chained <= CHAINED_MAX && this.hasRoom()) return undefined;
      return this.delivering.then(() => (this.hasRoom() ? undefined : this.room()));
    });
  }

  private delivering: Promise<void> = Promise.resolve();
  /** Records handed to `deliver` and not yet delivered. */
  private chained = 0;

  /**
   * Offsets on one stream are dense, so a record that starts beyond the next expected offset
   * means the consumer skipped something (an ordered consumer reset under load was seen to).
   * The missing range is read from the store before the record is delivered: a subscriber
   * never sees a gap, whatever the consumer did.
   */
  private async deliver(spec: StreamSubscriptionSpec, record: StoredRecord): Promise<void> {
    if (this.closed || record.first + record.count <= this.nextOffset) return;
    if (record.first > this.nextOffset) {
      const located = await spec.reader.locate(spec.subject, this.nextOffset);
      if (located !== undefined) {
        for await (const missing of spec.reader.scan(spec.subject, located.startSeq, record.seq - 1)) {
          this.pushEvents(missing, record.first - 1);
          if (this.nextOffset >= record.first) break;
        }
      }
    }
    this.pushEvents(record, Number.POSITIVE_INFINITY);
    this.releaseEphemeral();
  }

  private pushEvents(record: StoredRecord, through: number): void {
    const weight = Math.ceil(record.data.length / record.count);
    // A record holding the next offset holds every offset through its last: those whose events
    // this version cannot read (a newer writer's type or field) are passed over, not waited for
    // (every later event had waited behind one, for good: red-team).
    const holdsNext = record.first <= this.nextOffset;
    for (const event of eventsOf(record)) {
      if (event.offset < this.nextOffset || event.offset > through) continue;
      this.queue.push(event, weight);
      this.nextOffset = event.offset + 1;
    }
    if (holdsNext) this.nextOffset = Math.max(this.nextOffset, Math.min(lastOffsetOf(record), through) + 1);
  }

  private onEphemeral(data: Uint8Array): void {
    const events = liveEventsOf(data, undefined);
    const bytes = Math.ceil(data.length / Math.max(1, events.length));
    for (const event of events) {
      if (this.tooFarAhead(event.offset)) {
        this.dropped("ahead", event.offset);
        continue;
      }
      this.heldEphemeral.push({ event, bytes });
      this.heldBytes += bytes;
    }
    this.releaseEphemeral();
    this.holdWithinBounds();
  }

  /** Whether a live event following `offset` follows one the stream cannot have reached yet. */
  private tooFarAhead(offset: number): boolean {
    if (this.durableEnd === undefined) return false;
    return offset > Math.max(this.durableEnd, this.nextOffset - 1) + LIVE_AHEAD_MAX_OFFSETS;
  }

  /** Takes a durable end the stream is known to have reached; held live events that now look too far ahead are dropped. */
  private sawDurableEnd(end: number | undefined): void {
    if (end === undefined || end <= (this.durableEnd ?? -1)) return;
    const first = this.durableEnd === undefined;
    this.durableEnd = end;
    if (!first) return;
    // Live events held before the end was known: judged now.
    const kept: HeldLiveEvent[] = [];
    for (const held of this.heldEphemeral) {
      if (this.tooFarAhead(held.event.offset)) {
        this.heldBytes -= held.bytes;
        this.dropped("ahead", held.event.offset);
      } else {
        kept.push(held);
      }
    }
    this.heldEphemeral = kept;
  }

  /** Drops the held live events farthest ahead (the newest of equals) until the rest fit the bounds. */
  private holdWithinBounds(): void {
    while (this.heldEphemeral.length > HELD_LIVE_MAX_EVENTS || this.heldBytes > HELD_LIVE_MAX_BYTES) {
      let farthest = this.heldEphemeral.length - 1;
      for (let i = farthest - 1; i >= 0; i--) {
        if ((this.heldEphemeral[i] as HeldLiveEvent).event.offset > (this.heldEphemeral[farthest] as HeldLiveEvent).event.offset) farthest = i;
      }
      const [held] = this.heldEphemeral.splice(farthest, 1) as [HeldLiveEvent];
      this.heldBytes -= held.bytes;
      this.dropped("bound", held.event.offset);
    }
  }

  private dropped(reason: LiveEventsDropped["reason"], offset: number): void {
    if (this.droppedLive++ === 0) this.onLiveDropped?.({ subject: this.subject, reason, offset, durableEnd: this.durableEnd });
  }

  /**
   * Delivers held live-lane events whose durable predecessor has been delivered, in the order
   * they came. Each is looked at, not just the first: one following a later offset (sent so, or
   * from a publisher that knew more) must not hold back those behind it.
   */
  private releaseEphemeral(): void {
    if (this.heldEphemeral.length === 0) return;
    const kept: HeldLiveEvent[] = [];
    for (const held of this.heldEphemeral) {
      if (held.event.offset < this.nextOffset) {
        this.queue.push(held.event);
        this.heldBytes -= held.bytes;
      } else {
        kept.push(held);
      }
    }
    this.heldEphemeral = kept;
  }

  /** What this subscription holds of the live lane, and how many live events it dropped (tests, debugging). */
  get heldLive(): { readonly events: number; readonly bytes: number; readonly dropped: number } {
    return { events: this.heldEphemeral.length, bytes: this.heldBytes, dropped: this.droppedLive };
  }

  protected override onClose(): void {
    this.core?.unsubscribe();
    this.core = undefined;
  }
}

export interface FeedSubscriptionSpec {
  readonly js: JetStreamClient;
  /** Decides which messages are records it may read (RecordReader.recordOf). */
  readonly reader: RecordReader;
  readonly streamName: string;
  readonly filter: string;
  readonly afterSequence: number;
  readonly accept: (subject: string) => string | undefined;
}

/**
 * The partition feed. 2.9 has no multi-subject filters, so one partition uses the filter
 * `<prefix>.<p>.>`, and several use `<prefix>.>` with partitions picked client-side: that keeps
 * ONE global commit order, which is what makes a single `afterSequence` a safe resume point.
 */
export class PartitionFeed extends ConsumerSubscription<FeedBatch> {
  constructor(spec: FeedSubscriptionSpec, detach: (self: Closable) => void) {
    super(detach);
    this.launch(
      () =>
        this.consume({ js: spec.js, streamName: spec.streamName, filter: spec.filter, startSeq: spec.afterSequence > 0 ? spec.afterSequence + 1 : 0 }, (msg) => {
          const streamPath = spec.accept(msg.subject);
          if (streamPath === undefined) return undefined;
          const record = spec.reader.recordOf(msg);
          if (record === undefined) return undefined;
          this.queue.push({ sequence: msg.seq, streamPath, events: eventsOf(record), bytes: msg.data.length, offsets: { first: record.first, last: lastOffsetOf(record) } }, msg.data.length);
          return this.hasRoom() ? undefined : this.room();
        }),
      `feed ${spec.filter}`,
    );
  }
}

/**
 * Live-lane events of whole partitions: plain core-NATS subscriptions on the ephemeral
 * subjects (`<prefix>.<partition>.>`), nothing stored and nothing replayed.
 */
export class LivePartitionFeed implements Closable, AsyncIterable<AgentEvent> {
  private readonly queue = new AsyncQueue<AgentEvent>(() => void this.close());
  private readonly subscriptions: CoreSubscription[];

  constructor(
    nc: NatsConnection,
    subjects: readonly string[],
    /** Only these event types (undefined: every type), dropped before they are validated. */
    private readonly types: ReadonlySet<string> | undefined,
    private readonly detach: (self: Closable) => void,
  ) {
    this.subscriptions = subjects.map((subject) =>
      nc.subscribe(subject, {
        // A refused subscription calls back with an error and no message.
        callback: (error, msg) => {
          if (error === null) this.onMessage(msg);
        },
      }),
    );
  }

  private onMessage(msg: Msg): void {
    if (this.types !== undefined && !mayCarry(msg, this.types)) return;
    for (const event of liveEventsOf(msg.data, this.types)) this.queue.push(event);
  }

  [Symbol.asyncIterator](): AsyncIterator<AgentEvent> {
    return this.queue[Symbol.asyncIterator]();
  }

  async close(): Promise<void> {
    this.detach(this);
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    this.queue.end();
  }
}

/** An item's `type` when it is a string (looked at before the item is validated). */
function typeOf(item: unknown): string {
  const type: unknown = typeof item === "object" && item !== null ? (item as { type?: unknown }).type : undefined;
  return typeof type === "string" ? type : "";
}

/** False when the message's types header names none of `types` (no header: it may carry any). */
function mayCarry(msg: Msg, types: ReadonlySet<string>): boolean {
  if (!msg.headers) return true;
  const named = msg.headers.get(LIVE_TYPES_HEADER);
  return named === "" || named.split(",").some((type) => types.has(type));
}

/** The live-lane events of one core-NATS message (a JSON array); anything unreadable is skipped. */
function liveEventsOf(data: Uint8Array, types: ReadonlySet<string> | undefined): AgentEvent[] {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(data));
  } catch {
    return [];
  }
  const events: AgentEvent[] = [];
  for (const item of Array.isArray(raw) ? raw : []) {
    if (types !== undefined && !types.has(typeOf(item))) continue;
    const parsed = parseStoredEvent(item);
    if (parsed.ok && parsed.event.ephemeral === true) events.push(parsed.event);
  }
  return events;
}
