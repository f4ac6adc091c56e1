// Reading committed batch records back: direct gets (one message by subject, cheap, no
// consumer) and, for long ranges, an ordered consumer. Every record starts with its first
// offset and event count, so locating an offset never parses a record's events.

import type { AgentEvent } from "@agentrt/contract";
import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { type BatchRecord, decodeRecordJson, readRecordHead, recordEvents } from "../batch.ts";
import type { DirectGets } from "./direct-get.ts";
import { type RecordSigning, untrustedBecause } from "./signing.ts";

/** One stored batch message: where it sits and which offsets it holds. */
export interface StoredRecord {
  readonly seq: number;
  readonly subject: string;
  readonly first: number;
  readonly count: number;
  readonly data: Uint8Array;
  /** The body, when reading it already parsed it (a signature's check, a record without a head). */
  readonly body?: BatchRecord;
}

export function lastOffsetOf(record: StoredRecord): number {
  return record.first + record.count - 1;
}

/** A stored message as the different reads hand it over. */
export interface RawMsg {
  readonly seq: number;
  readonly subject: string;
  readonly data: Uint8Array;
  /** A get's headers. */
  readonly header?: { get(name: string): string } | undefined;
  /** A consumer message's headers. */
  readonly headers?: { get(name: string): string } | undefined;
  /** When the server stored it (gets through the leader and consumer messages carry it so). */
  readonly time?: Date;
}

/**
 * The record of a message, or undefined when it is not a batch record we can read: its head
 * (offsets, count, path) must be whole, the body must close, and with `pathOf` the path must be
 * the one its subject stands for. Only the head is parsed. A message that merely starts like a
 * record (`{"v":1,"first":1000000,"n":1,` and anything) had been read as one, and moved the
 * stream's end. A record that is valid JSON throughout is only refused by its signature
 * (signing.ts).
 */
export function toStoredRecord(msg: RawMsg, pathOf?: (subject: string) => string | undefined): StoredRecord | undefined {
  const head = readRecordHead(msg.data);
  if (head !== undefined) {
    const closed = msg.data.length > 2 && msg.data[msg.data.length - 2] === CLOSE_BRACKET && msg.data[msg.data.length - 1] === CLOSE_BRACE;
    if (!closed || head.first < 1 || head.count < 1 || (pathOf !== undefined && pathOf(msg.subject) !== head.path)) return undefined;
    return { seq: msg.seq, subject: msg.subject, first: head.first, count: head.count, data: msg.data };
  }
  const body = decodeRecordJson(msg.data);
  if (body === undefined || body.events.length === 0 || body.first < 1 || (pathOf !== undefined && pathOf(msg.subject) !== body.path)) return undefined;
  return { seq: msg.seq, subject: msg.subject, first: body.first, count: body.events.length, data: msg.data, body };
}

const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;

export function decodeStored(record: StoredRecord): BatchRecord | undefined {
  return record.body ?? decodeRecordJson(record.data);
}

export function eventsOf(record: StoredRecord): AgentEvent[] {
  const body = decodeStored(record);
  return body === undefined ? [] : recordEvents(body);
}

export class RecordReader {
  /**
   * @param consistentReads read through the stream leader. A replicated stream's direct gets
   *   may be answered by a follower that has not applied the newest commit yet, so a reader
   *   could miss an event that was already acknowledged (a driver handed request R would not
   *   find R). The leader-served `STREAM.MSG.GET` takes the same `next_by_subj` query on 2.9.
   */
  constructor(
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly streamName: string,
    private readonly consistentReads = false,
    /** How long a scan's consumer may deliver nothing before the rest is read by gets (see `scan`). */
    private readonly stallMs = SCAN_STALL_MS,
    /** How long a scan waits for its consumer to be created before it reads the range by gets (see `scan`). */
    private readonly openWaitMs = SCAN_OPEN_WAIT_MS,
    /** The store's direct gets on its inbox; without them, nats.js's (a request each). */
    private readonly direct?: DirectGets,
    /** Whose records may be read (signing.ts); without a trust, every readable record. */
    private readonly signing: RecordSigning = {},
    /** The stream path a subject stands for: a record naming another is not read. */
    private readonly pathOf?: (subject: string) => string | undefined,
  ) {}

  /** Verdicts on signed messages by sequence, so a record read again is not verified again. */
  private readonly verdicts = new Map<number, boolean>();

  /**
   * The record of a stored message, or undefined when it may not be read: it is not a record,
   * or it is not signed as the store's trust asks (signing.ts). A refused signature is
   * reported to `signing.onUntrusted`.
   */
  recordOf(msg: RawMsg): StoredRecord | undefined {
    const record = toStoredRecord(msg, this.pathOf);
    if (record === undefined) return undefined;
    // The check parses the body of another service's record; reading it then parses it no more.
    let body = record.body;
    const parse = () => (body ??= decodeRecordJson(msg.data));
    if (!this.trusted(msg, parse)) return undefined;
    return body === undefined || record.body !== undefined ? record : { ...record, body };
  }

  /**
   * A record this store just published and the server acknowledged at `seq`: known good, so its
   * signature is not checked again when the feed or a read brings it back (a reducer folds every
   * record it wrote, a driver reads its own settlement).
   */
  wrote(seq: number): void {
    if (this.signing.trust !== undefined) this.remember(seq, true);
  }

  private remember(seq: number, trusted: boolean): void {
    if (this.verdicts.size >= VERDICTS_KEPT) this.verdicts.delete(this.verdicts.keys().next().value as number);
    this.verdicts.set(seq, trusted);
  }

  private trusted(msg: RawMsg, body: () => BatchRecord | undefined): boolean {
    const trust = this.signing.trust;
    if (trust === undefined) return true;
    const known = this.verdicts.get(msg.seq);
    if (known !== undefined) return known;
    const reason = untrustedBecause(trust, { subject: msg.subject, data: msg.data, headers: msg.header ?? msg.headers, storedAtMs: () => msg.time?.getTime(), body });
    if (reason !== undefined) this.signing.onUntrusted?.({ subject: msg.subject, seq: msg.seq, reason });
    this.remember(msg.seq, reason === undefined);
    return reason === undefined;
  }

  /** Scans that finished their range by gets because their consumer could not be had or went quiet. */
  scansFinishedByGets = 0;

  private get(query: { last_by_subj: string } | { next_by_subj: string; seq: number }) {
    return this.consistentReads
      ? this.jsm.streams.getMessage(this.streamName, query as Parameters<JetStreamManager["streams"]["getMessage"]>[1])
      : this.direct !== undefined
        ? this.direct.get(this.streamName, query)
        : this.jsm.direct.getMessage(this.streamName, query);
  }

  /** The subject's last readable record (see `tail`). */
  async last(subject: string): Promise<StoredRecord | undefined> {
    return (await this.tail(subject))?.record;
  }

  /**
   * The subject's last message: its sequence, and the last record that can be read (usually
   * that message). A message that is not a record (a NATS user that may publish on the events'
   * subjects sent something else) is passed over, not taken as the end of the stream: reading
   * it as the end had made the whole history read as empty and every later append fail, for
   * good. A writer publishes after `seq`, so its optimistic check still holds.
   * Undefined: the subject has no message.
   */
  async tail(subject: string): Promise<{ readonly seq: number; readonly record: StoredRecord | undefined } | undefined> {
    const msg = await this.get({ last_by_subj: subject });
    if (msg === null) return undefined;
    const record = this.recordOf(msg);
    if (record !== undefined) return { seq: msg.seq, record };
    return { seq: msg.seq, record: await this.lastBefore(subject, msg.seq) };
  }

  /**
   * The last readable record below `seq`. With no "previous by subject" query on 2.9, it looks
   * back in doubling steps for any record before `seq`, then narrows down by halves between that
   * one and `seq`, as `locate` does: a few gets, however long the stream.
   */
  private async lastBefore(subject: string, seq: number): Promise<StoredRecord | undefined> {
    // Invariant: no readable record lies in [hi, seq); each step looks only below the last.
    let hi = seq;
    let found: StoredRecord | undefined;
    for (let step = 1; found === undefined; step *= 2) {
      const from = Math.max(1, seq - step);
      found = await this.nextFrom(subject, from, hi - 1);
      if (found !== undefined) break;
      if (from === 1) return undefined;
      hi = from;
    }
    // Then `found` is readable and below `hi`.
    while (found.seq + 1 < hi) {
      const mid = Math.floor((found.seq + 1 + hi) / 2);
      const probe = await this.nextFrom(subject, mid, hi - 1);
      if (probe === undefined) hi = mid;
      else found = probe;
    }
    return found;
  }

  /**
   * The first readable record on `subject` with sequence ≥ `seq` (and ≤ `until`): messages that
   * are not records are passed over, one get each.
   */
  async nextFrom(subject: string, seq: number, until = Number.POSITIVE_INFINITY): Promise<StoredRecord | undefined> {
    for (let from = Math.max(1, seq); from <= until; ) {
      const msg = await this.get({ next_by_subj: subject, seq: from });
      if (msg === null || msg.seq > until) return undefined;
      const record = this.recordOf(msg);
      if (record !== undefined) return record;
      from = msg.seq + 1;
    }
    return undefined;
  }

  /**
   * The value of header `name` on the subject's first message: `{ value: undefined }` when it
   * has no such header, undefined when the subject has no message.
   */
  async firstHeader(subject: string, name: string): Promise<{ value: string | undefined } | undefined> {
    const msg = await this.get({ next_by_subj: subject, seq: 1 });
    if (msg === null) return undefined;
    const value = msg.header?.get(name);
    return { value: value === undefined || value === "" ? undefined : value };
  }

  /**
   * The sequence of the record holding `offset` — binary search over stream sequences with
   * `next_by_subj`, so the cost is O(log sequences) round trips, independent of `offset`.
   * Returns undefined when the stream's last offset is below `offset`.
   */
  async locate(subject: string, offset: number): Promise<{ startSeq: number; last: StoredRecord; first?: StoredRecord } | undefined> {
    const last = await this.last(subject);
    if (last === undefined || lastOffsetOf(last) < offset) return undefined;
    if (last.first <= offset) return { startSeq: last.seq, last };
    const first = await this.nextFrom(subject, 1);
    if (first === undefined) return undefined;
    if (first.first > offset || lastOffsetOf(first) >= offset) return { startSeq: first.seq, last, first };
    // Invariant: the record at `lo` starts at or before `offset`; every record at ≥ `hi` starts after it.
    let lo = first.seq;
    let hi = last.seq;
    while (lo + 1 < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const probe = await this.nextFrom(subject, mid, hi - 1);
      if (probe === undefined || probe.first > offset) hi = mid;
      else lo = probe.seq;
    }
    return { startSeq: lo, last };
  }

  /**
   * The records of a located range, reusing the first and last records `locate` already
   * fetched (a short stream is then read in two round trips instead of four).
   */
  async *scanLocated(
    subject: string,
    located: { startSeq: number; last: StoredRecord; first?: StoredRecord },
    expectedRecords = Number.POSITIVE_INFINITY,
    signal?: AbortSignal,
  ): AsyncGenerator<StoredRecord> {
    let from = located.startSeq;
    if (located.first !== undefined && located.first.seq === from) {
      yield located.first;
      from = located.first.seq + 1;
    }
    if (from > located.last.seq) return;
    if (from < located.last.seq) yield* this.scan(subject, from, located.last.seq - 1, expectedRecords, signal);
    signal?.throwIfAborted();
    yield located.last;
  }

  /**
   * Records on `subject` from `fromSeq` through `untilSeq`, in order. Direct gets (one round
   * trip each, nothing to set up) serve short ranges; `expectedRecords` says how many the caller
   * probably needs. Past that budget an ordered consumer streams the rest, pulling no more than
   * the caller is expected to use, so a bounded read never drags a long tail over the wire,
   * and never more than IN_FLIGHT_BYTES at once, so a reader of big records cannot flood its
   * connection (nats-server drops a slow consumer, and with it every other user of `nc`).
   * `signal` stops the pulls at once: a client that went away costs nothing more.
   */
  async *scan(
    subject: string,
    fromSeq: number,
    untilSeq: number,
    expectedRecords = Number.POSITIVE_INFINITY,
    signal?: AbortSignal,
  ): AsyncGenerator<StoredRecord> {
    let next = fromSeq;
    const direct = expectedRecords <= MAX_DIRECT_RECORDS ? expectedRecords + 2 : DIRECT_GETS_BEFORE_CONSUMER;
    let yielded = 0;
    let largest = 0;
    for (let i = 0; i < direct; i++) {
      signal?.throwIfAborted();
      if (next > untilSeq) return;
      const record = await this.nextFrom(subject, next, untilSeq);
      if (record === undefined) return;
      yield record;
      yielded++;
      largest = Math.max(largest, record.data.length);
      next = record.seq + 1;
    }
    if (next > untilSeq) return;
    signal?.throwIfAborted();
    const consumer = await this.openConsumer(subject, next);
    if (consumer === undefined) {
      yield* this.byGets(subject, next, untilSeq, signal);
      return;
    }
    // One pull at a time, bounded by bytes (the server will not bound bytes and messages
    // together): about what the caller is expected to use, never less than one record of the
    // largest kind, never more than IN_FLIGHT_BYTES. The next pull is asked for only once the
    // last one was handed over, so a slow or departed reader holds at most one pull's bytes.
    let lastSeen = next - 1;
    let sinceYield = 0;
    // The consumer went quiet or failed: the rest of the range is read by gets.
    let lost = false;
    try {
      for (;;) {
        // Buffered messages are handed over in microtasks only: give I/O (a client's hang-up,
        // other requests) its turn before asking for more.
        await turnOfEventLoop();
        sinceYield = 0;
        signal?.throwIfAborted();
        const remaining = expectedRecords - yielded;
        const expectedBytes = Number.isFinite(remaining) ? remaining * Math.max(largest, 1024) * 1.25 : IN_FLIGHT_BYTES;
        let delivered = 0;
        let done = false;
        try {
          const batch = await consumer.fetch({ max_bytes: Math.round(Math.min(IN_FLIGHT_BYTES, Math.max(MIN_PULL_BYTES, expectedBytes))), expires: PULL_EXPIRES_MS });
          void this.countHeartbeatWakeUps(batch);
          const messages = endAtByteLimit(untilStalled(batch, this.stallMs, () => (lost = true)), () => delivered);
          for await (const msg of messages) {
            delivered++;
            // A consumer reset (a failover, a missed heartbeat) can deliver a message again.
            if (msg.seq <= lastSeen) continue;
            const record = this.recordOf(msg);
            if (record !== undefined && record.seq <= untilSeq) {
              yield record;
              yielded++;
              largest = Math.max(largest, record.data.length);
              sinceYield += record.data.length;
              if (sinceYield >= YIELD_EVERY_BYTES) {
                await turnOfEventLoop();
                sinceYield = 0;
                signal?.throwIfAborted();
              }
            }
            lastSeen = msg.seq;
            if (msg.seq >= untilSeq || msg.info.pending === 0) {
              done = true;
              break;
            }
            // The server has ended this pull (see PULL_MESSAGES); the client would notice only
            // after two missed heartbeats. The next pull continues from here.
            if (delivered >= PULL_MESSAGES) break;
          }
        } catch {
          // The caller's abort ends the scan; anything the consumer threw (a pull refused, the
          // consumer lost with a NATS node, a record larger than a pull) leaves the rest to gets,
          // which need no consumer and fail on their own if the stream itself cannot answer.
          signal?.throwIfAborted();
          lost = true;
        }
        if (done || delivered === 0 || lost) break;
      }
    } finally {
      await consumer.delete().catch(() => undefined);
    }
    signal?.throwIfAborted();
    // An ephemeral consumer of a replicated stream may live on a follower that has not applied
    // the newest commits yet, and reports nothing pending before `untilSeq` (which the leader
    // gave us). Finish the range through the leader so an acknowledged event is never missed.
    // A consumer that was lost is finished the same way (gets need no consumer).
    if (lost) this.scansFinishedByGets++;
    if (this.consistentReads || lost) yield* this.byGets(subject, lastSeen + 1, untilSeq, signal);
  }

  /**
   * Pulls that ended only when the client missed the consumer's heartbeats (a pull waiting for
   * messages the server will not send), counted from the pull's own notifications.
   */
  pullsWokenByHeartbeats = 0;

  private async countHeartbeatWakeUps(batch: { status(): AsyncIterable<{ type: string }> }): Promise<void> {
    try {
      for await (const notification of batch.status()) if (notification.type === "heartbeats_missed") this.pullsWokenByHeartbeats++;
    } catch {
      // The pull's own iterator reports its failures.
    }
  }

  /** Records on `subject` from `fromSeq` through `untilSeq` by gets alone, one round trip each. */
  private async *byGets(subject: string, fromSeq: number, untilSeq: number, signal: AbortSignal | undefined): AsyncGenerator<StoredRecord> {
    for (let seq = fromSeq; seq <= untilSeq; ) {
      signal?.throwIfAborted();
      const record = await this.nextFrom(subject, seq, untilSeq);
      if (record === undefined) return;
      yield record;
      seq = record.seq + 1;
    }
  }

  /**
   * The scan's ordered consumer, or undefined when it cannot be had within `openWaitMs`.
   * Creating a consumer of a replicated stream goes through the cluster's meta leader, which
   * is the slowest part of a NATS cluster to recover: in the chaos soak, with nodes restarting,
   * reads failed for minutes on "timeout" while every get (served by the stream's own leader)
   * answered. A consumer created after the wait is removed as soon as it exists.
   */
  private async openConsumer(subject: string, fromSeq: number) {
    const opening = this.js.consumers.get(this.streamName, {
      filter_subjects: subject,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: fromSeq,
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), this.openWaitMs);
    });
    try {
      const opened = await Promise.race([opening, late]);
      if (opened !== "late") return opened;
      opening.then((consumer) => consumer.delete()).catch(() => undefined);
    } catch {
      // Refused or timed out: gets need no consumer.
    } finally {
      clearTimeout(timer);
    }
    this.scansFinishedByGets++;
    return undefined;
  }
}

/**
 * A pull ends with "message size exceeds maxbytes" when its byte budget is spent before the
 * next message: that is the end of this pull (the next one continues), not a failure — unless
 * nothing was delivered, when the record itself is larger than any pull may be.
 */
async function* endAtByteLimit<T>(batch: AsyncIterable<T>, delivered: () => number): AsyncGenerator<T> {
  try {
    yield* batch;
  } catch (error) {
    const sizeLimit = error instanceof Error && error.name === "JetStreamStatusError" && /message size exceeds maxbytes/i.test(error.message);
    if (!sizeLimit || delivered() === 0) throw error;
  }
}

/**
 * Ends a pull that delivers nothing — no message, no end, no error — for `stallMs`: it stops the
 * pull and tells the caller (`onStall`), who finishes the range by gets. The chaos soak saw a
 * read's ordered consumer go silent for good after NATS node restarts (the client library
 * re-pulls and re-checks the consumer forever while nothing arrives), which held a work item,
 * and every later delivery of it waiting on that handling, until the process died.
 */
export async function* untilStalled<T>(batch: AsyncIterable<T> & { stop(error?: Error): void }, stallMs: number, onStall: () => void): AsyncGenerator<T> {
  const iterator = batch[Symbol.asyncIterator]();
  let ended = false;
  try {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const stall = new Promise<"stalled">((resolve) => {
        timer = setTimeout(() => resolve("stalled"), stallMs);
      });
      const next = await Promise.race([iterator.next(), stall]).finally(() => clearTimeout(timer));
      if (next === "stalled") {
        ended = true;
        onStall();
        batch.stop();
        return;
      }
      if (next.done === true) {
        ended = true;
        return;
      }
      yield next.value;
    }
  } finally {
    // The reader stopped early (it has its range): end the pull as `for await` over it would.
    if (!ended) await iterator.return?.();
  }
}

/**
 * How long a scan waits for its consumer to exist (see `openConsumer`). Creating one takes
 * milliseconds on a healthy cluster and up to the request timeout on a cluster whose meta
 * leader is busy recovering; past this the range is read by gets instead.
 */
export const SCAN_OPEN_WAIT_MS = 1_000;

/** A scan's pull silent this long is given up (see `untilStalled`): several pulls' worth. */
export const SCAN_STALL_MS = 5_000;

/**
 * How long one pull may wait for messages that are not there. A pull that is not filled (fewer
 * bytes left than its budget) waits this long unless the last message says nothing is pending;
 * after a failover that signal can be missing on every pull, so the wait is short, and whatever
 * the consumer did not deliver is finished through the leader below.
 */
const PULL_EXPIRES_MS = 1_000;

/**
 * How many messages one byte-bounded pull asks the server for: nats.js requests 100 when it is
 * given a byte budget and no message count (the two are exclusive in its API). After that many
 * the server has ended the pull, but the client keeps waiting until it misses two idle
 * heartbeats (1.5 s here): a whole-stream read of 10 000 records waited 150 s so. A scan ends
 * such a pull itself and asks for the next at once.
 */
const PULL_MESSAGES = 100;

const turnOfEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Record bytes handed over between two turns of the event loop during a scan. */
const YIELD_EVERY_BYTES = 512 * 1024;

/** Signature verdicts a reader keeps (`RecordReader.trusted`): about the records of a busy minute. */
const VERDICTS_KEPT = 16_384;

/** Ranges expected to need at most this many records are read by direct gets alone. */
const MAX_DIRECT_RECORDS = 32;
const DIRECT_GETS_BEFORE_CONSUMER = 8;
/**
 * The most record bytes one scan's consumer may have pulled and not yet handed over. Above the
 * largest record (MAX_BATCH_BYTES plus headers), or a pull could never deliver it.
 */
export const IN_FLIGHT_BYTES = 4 * 1_048_576;
const MIN_PULL_BYTES = 1_048_576 + 65_536;
