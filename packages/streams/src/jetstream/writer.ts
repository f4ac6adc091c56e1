// The append path: per agent stream, appends queue up and are committed by group commit —
// every append waiting behind an in-flight publish goes into the NEXT JetStream message
// together (still one atomic message, each append contiguous inside it, keys and
// expectedLastOffset decided one by one). A message is published with
// `expect.lastSubjectSequence` = the view's last sequence; "wrong last sequence" means another
// writer got there first: catch up and decide again. `Nats-Msg-Id` names the offset the record
// claims, so a publish retried after a timeout lands at most once and two writers racing for
// one offset on a replicated stream cannot both be stored (see commitGroup). Idempotency keys are checked and
// reserved in the key index (key-check.ts) before the publish, so a keyed append to a long
// stream costs a few lookups, never a read of the stream's history; new keys (the common case)
// are reserved without looking them up first, and those of an at-head append whose caller
// vouches that they are new (the reducer, `keysNewAtHead`) in the same breath as the publish.
// A record that loses its offset to another writer's keeps its keys' entries: the next attempt
// moves them from the revisions it wrote, without looking them up again. Keys that ride with a
// settlement key in their batch have no entries of their own (PreparedBatch.indexKeys).

import { randomBytes } from "node:crypto";
import { type AgentEvent, AgentRuntimeError, idempotencyKeysOf, settlementKeyRiddenBy } from "@agentrt/contract";
import { type PreparedBatch, decideAppend, recordJson } from "../batch.ts";
import { type AppendHint, type AppendOptions, type AppendResult, MAX_BATCH_BYTES, MAX_BATCH_EVENTS } from "../event-store.ts";
import { classifyNatsError, isWrongLastSequence } from "./errors.ts";
import { type JetStreamPublisher, PublishDuplicateError, type PublishExpectations, PublishUnconfirmedError } from "./publisher.ts";
import { checkKeys, eventsAt, type KeyVerdict, pointKeysAt, reserveKeys } from "./key-check.ts";
import type { KeyIndex } from "./key-index.ts";
import { type RecordReader, type StoredRecord, eventsOf } from "./records.ts";
import { type StreamViewState, catchUp, emptyView, endAtRecord } from "./stream-view.ts";
import { type RecordSigner, signatureHeaders } from "./signing.ts";
import { KEYS_INDEXED_HEADER } from "./subjects.ts";

/** A claim of an offset still being stored by another writer: wait a moment before looking. */
const DUPLICATE_RETRY_MS = 50;
const DUPLICATE_LOOKS = 4;
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface PendingAppend {
  readonly batch: PreparedBatch;
  readonly options: AppendOptions | undefined;
  readonly resolve: (result: AppendResult) => void;
  readonly reject: (error: unknown) => void;
}

interface StreamWriter {
  readonly subject: string;
  readonly view: StreamViewState;
  readonly pending: PendingAppend[];
  running: boolean;
  /** Known to have every key of its history in the key index. */
  indexed: boolean;
  /**
   * The newest record a feed brought for this stream, kept even while an append runs: a publish
   * that lost its offset takes it instead of reading the stream's last record (`fedPast`).
   */
  fed: FedRecord | undefined;
}

/** A stored record as far as a lost publish needs it: where it sits and which keys it carries. */
interface RecordKeys {
  readonly first: number;
  readonly keys: readonly string[];
}

/** The newest record a feed brought: its keys are only worked out when a publish lost to it. */
interface FedRecord {
  readonly seq: number;
  readonly lastOffset: number;
  readonly events: readonly AgentEvent[];
}

type Outcome = { kind: "result"; result: AppendResult } | { kind: "error"; error: unknown };

export interface WriterOptions {
  readonly publisher: JetStreamPublisher;
  readonly reader: RecordReader;
  readonly index: KeyIndex;
  readonly now: () => Date;
  /** Idle per-stream views kept for the next append (bounded memory). */
  readonly maxCachedStreams: number;
  /** Commit attempts lost to other writers before giving up with a retryable conflict. */
  readonly maxAttempts: number;
  /** Signs each record (signing.ts); without it, records go out unsigned. */
  readonly signer?: RecordSigner;
}

const encoder = new TextEncoder();

export class BatchWriter {
  private readonly writers = new Map<string, StreamWriter>();
  /** Writers with new appends, started together on the next turn of the event loop. */
  private readonly toStart = new Set<StreamWriter>();
  private startScheduled = false;

  constructor(private readonly options: WriterOptions) {}

  append(subject: string, batch: PreparedBatch, appendOptions: AppendOptions | undefined): Promise<AppendResult> {
    const writer = this.writerFor(batch.streamPath, subject);
    return new Promise<AppendResult>((resolve, reject) => {
      writer.pending.push({ batch, options: appendOptions, resolve, reject });
      if (!writer.running) this.scheduleStart(writer);
    });
  }

  /**
   * Starting every idle stream's commit in one callback puts their publishes into the same
   * socket write (nats.js flushes once per microtask checkpoint) and lets appends issued in
   * the same turn share a message. The callback is a microtask, not the event loop's next
   * check phase: waiting for `setImmediate` put a reducer's request on the wire 0.9 ms after
   * it decided (p50, sequential turns) and gained no throughput (BENCHMARKS.md, "Where a
   * sequential turn's 5 ms go").
   */
  private scheduleStart(writer: StreamWriter): void {
    this.toStart.add(writer);
    if (this.startScheduled) return;
    this.startScheduled = true;
    queueMicrotask(() => {
      this.startScheduled = false;
      const writers = [...this.toStart];
      this.toStart.clear();
      for (const w of writers) if (!w.running) void this.drain(w);
    });
  }

  /**
   * Takes a view a caller just read (its last record's sequence and offset) as this writer's
   * view, so the next append needs no catch-up of its own. Only ever moves a view forward,
   * and never while an append is being committed: a view stays behind the truth or on it.
   */
  warm(streamPath: string, subject: string, view: StreamViewState): void {
    const writer = this.writerFor(streamPath, subject);
    if (writer.running || writer.pending.length > 0) return;
    if (writer.view.lastSeq >= view.lastSeq) return;
    endAtRecord(writer.view, view.lastSeq, view.lastOffset);
  }

  /**
   * Takes a record seen on a feed as the view of an idle writer that knows less (its stream's
   * writer is made when there is none): a record's sequence and last offset are a view that is
   * on the stream's end or behind it, never ahead. A reducer folds the records it is about to
   * react to, and a driver reads the request it is about to settle: their next append then
   * needs no read. A driver's first turn of an agent reads the stream while the feed brings the
   * request; the read's older end (`warm`) does not move the view back.
   */
  observe(streamPath: string, subjectOf: (streamPath: string) => string, seq: number, events: readonly AgentEvent[]): void {
    const last = events.at(-1);
    if (last === undefined) return;
    const writer = this.writers.get(streamPath) ?? this.writerFor(streamPath, subjectOf(streamPath));
    takeRecord(writer, seq, last.offset);
    if (seq > (writer.fed?.seq ?? 0)) writer.fed = { seq, lastOffset: last.offset, events };
  }

  /**
   * Drops an idle stream's view (a reducer evicting an agent it will not append to until the
   * agent's next event): the next append looks the stream's end up again. A writer with an
   * append in flight or queued stays.
   */
  forget(streamPath: string): void {
    const writer = this.writers.get(streamPath);
    if (writer !== undefined && !writer.running && writer.pending.length === 0) this.writers.delete(streamPath);
  }

  /** What this client knows of a stream that spares an append a look-up (nothing: `{}`). */
  hint(streamPath: string): AppendHint {
    const writer = this.writers.get(streamPath);
    if (writer === undefined) return {};
    const { lastSeq, lastOffset } = writer.view;
    return { ...(writer.indexed ? { keysIndexed: true } : {}), ...(lastSeq > 0 ? { record: { sequence: lastSeq, lastOffset } } : {}) };
  }

  /**
   * Takes knowledge a caller kept across a `forget` (or a record it saw on the feed). A record
   * is a view that is behind the stream's end or on it — never ahead, since it was stored — so
   * it is taken like `warm`'s: only forward, and never while an append is being committed.
   * "Indexed" never stops being true, so it is taken at any time.
   */
  prime(streamPath: string, subject: string, hint: AppendHint): void {
    if (hint.keysIndexed !== true && hint.record === undefined) return;
    const writer = this.writerFor(streamPath, subject);
    if (hint.keysIndexed === true) writer.indexed = true;
    if (hint.record !== undefined) takeRecord(writer, hint.record.sequence, hint.record.lastOffset);
  }

  /**
   * The committed event carrying `key`: the index's reservation names its record, which is read
   * and checked (a reservation whose writer lost, or one not committed yet, names none). A
   * stream written before the index is indexed first, once, as its next keyed append would be.
   */
  async findKeyed(streamPath: string, subject: string, key: string): Promise<AgentEvent | undefined> {
    const writer = this.writerFor(streamPath, subject);
    if (!writer.indexed) await this.ensureIndexed(writer, streamPath);
    const reservation = await this.options.index.lookup(streamPath, key);
    if (reservation === undefined || reservation.first < 1) return undefined;
    const events = await eventsAt(this.options.reader, subject, reservation.first);
    return events.find((event) => event.idempotencyKey === key);
  }

  /** How many streams' views are held (tests). */
  get cachedStreams(): number {
    return this.writers.size;
  }

  private writerFor(streamPath: string, subject: string): StreamWriter {
    let writer = this.writers.get(streamPath);
    if (writer !== undefined) {
      this.writers.delete(streamPath);
      this.writers.set(streamPath, writer);
      return writer;
    }
    writer = { subject, view: emptyView(), pending: [], running: false, indexed: false, fed: undefined };
    this.writers.set(streamPath, writer);
    if (this.writers.size > this.options.maxCachedStreams) {
      for (const [path, candidate] of this.writers) {
        if (this.writers.size <= this.options.maxCachedStreams) break;
        if (!candidate.running && candidate.pending.length === 0) this.writers.delete(path);
      }
    }
    return writer;
  }

  private async drain(writer: StreamWriter): Promise<void> {
    writer.running = true;
    try {
      while (writer.pending.length > 0) {
        const group = takeGroup(writer.pending);
        try {
          const outcomes = await this.commitGroup(writer, group);
          outcomes.forEach((outcome, i) => {
            const member = group[i] as PendingAppend;
            if (outcome.kind === "result") member.resolve(outcome.result);
            else member.reject(outcome.error);
          });
        } catch (error) {
          const classified = classifyNatsError(error, `append to ${writer.subject}`);
          for (const member of group) member.reject(classified);
          // The view may be wrong after an unknown outcome: rebuild it on the next append.
          Object.assign(writer.view, emptyView());
        }
      }
    } finally {
      writer.running = false;
    }
  }

  private async commitGroup(writer: StreamWriter, group: readonly PendingAppend[]): Promise<Outcome[]> {
    const { view, subject } = writer;
    const streamPath = (group[0] as PendingAppend).batch.streamPath;
    // The keys the index holds: a key riding with its settlement key is unique when that is.
    const keys = group.flatMap((m) => m.batch.indexKeys);
    if (keys.length > 0 && !writer.indexed) await this.ensureIndexed(writer, streamPath);
    if (group.some((m) => m.options?.expectedLastOffset !== undefined && m.options.expectedLastOffset > view.lastOffset)) {
      await catchUp(this.options.reader, subject, view);
    }
    // Keys whose entries this group wrote for a record that then lost its offset to another
    // writer's record, with the revisions written: still ours (see heldAfterLoss), so the next
    // attempt replaces them compare-and-set without looking them up and reading that record.
    let held = new Map<string, number>();
    for (let attempt = 0; attempt < this.options.maxAttempts; attempt++) {
      let verdicts = new Map<string, KeyVerdict>();
      // First try: take every key as new and reserve it outright (a create fails if the key has
      // an entry), one round trip instead of a lookup and then a reservation. A key that has an
      // entry sends the group through the lookups; a reservation made on the way names the
      // record we meant to publish, which the lookups then read as pending or stale, exactly
      // like the reservation of a writer that lost its publish.
      const guessing = attempt === 0 && keys.length > 0;
      if (keys.length > 0 && !guessing) {
        // A batch past its head is refused whatever its keys' entries say: no lookup for them.
        const unheld = group.flatMap((m) => (pastItsHead(m, view) ? [] : m.batch.indexKeys)).filter((key) => !held.has(key));
        const check = unheld.length === 0 ? undefined : await checkKeys(this.options, streamPath, subject, view, unheld, ridersOf(group));
        verdicts = check?.verdicts ?? new Map();
        // Replaced from the revision we wrote: a writer that moved the entry since makes the
        // compare-and-set fail, and the next attempt looks the key up.
        for (const [key, revision] of held) verdicts.set(key, { kind: "stale", revision });
        held = new Map();
      }
      const createdAt = this.options.now().toISOString();
      const { outcomes, committed, committedKeys, parts } = decideGroup(view, group, createdAt, verdicts);
      // A refusal made while guessing may be wrong: an append whose keys are all taken is a
      // duplicate whatever its expected offset says (a retried create answers its originals, not
      // a conflict). Only the lookups know, so they decide — except for a batch past its head,
      // whose conflict stands either way.
      if (guessing && outcomes.some((o, i) => o.kind === "error" && !pastItsHead(group[i] as PendingAppend, view))) continue;
      if (committed.length === 0) return outcomes;
      const first = view.lastOffset + 1;
      // Keys new at the head (the caller's word, see AppendOptions): the reservations go out
      // with the publish, not before it. The publish still commits only onto the view the
      // caller folded, so a key cannot land twice; what a reservation that did not take means
      // is settled once the outcome is known (below).
      const alongside = guessing && committedKeys.length > 0 && group.every((m) => m.options?.keysNewAtHead === true && m.options.expectedLastOffset !== undefined);
      const reserving = alongside
        ? reserveKeys(this.options.index, streamPath, committedKeys, verdicts, first).then(
            (written) => written !== undefined,
            () => false,
          )
        : undefined;
      const reserved = alongside || committedKeys.length === 0 ? undefined : await reserveKeys(this.options.index, streamPath, committedKeys, verdicts, first);
      if (!alongside && committedKeys.length > 0 && reserved === undefined) {
        // After a wrong guess the lookups decide (and catch up when a reservation says to).
        if (!guessing) await catchUp(this.options.reader, subject, view);
        continue;
      }
      const body = encoder.encode(recordJson(streamPath, first, committed.length, createdAt, parts.join(",")));
      // The stream's first record, its keys reserved before it: it says so itself (no marker
      // entry to write), unless the reservations go out alongside it and may not have landed.
      const wasEmpty = view.lastSeq === 0;
      const claimsIndex = wasEmpty && !alongside;
      try {
        // The message id claims the OFFSET, not just this attempt: on a replicated stream
        // nats-server 2.9 checks the expected last subject sequence before the write's
        // consensus, so two writers racing for the same offset could both be acknowledged
        // (nats-server#4320) and one event was then lost to every reader. The duplicate check
        // on the message id does see writes still in flight, so only one claim of an offset
        // is ever stored; a retried publish of our own claim is answered "duplicate" too.
        // After a message readers pass over, or a squatted claim, the claim names that message
        // as well (StreamViewState.claimAfter): the plain claim would otherwise be refused to
        // every writer until the duplicate window ended.
        const signer = this.options.signer;
        const headers: [string, string][] = [
          ...(claimsIndex ? ([[KEYS_INDEXED_HEADER, this.options.index.epoch]] as [string, string][]) : []),
          ...(signer === undefined ? [] : signatureHeaders(signer, subject, view.lastSeq, body)),
        ];
        const claim =
          view.claimAfter === undefined
            ? `${subject}@${first}`
            : (view.squats ?? 0) > 1
              ? `${subject}@${first}~${view.claimAfter}.${randomBytes(12).toString("hex")}`
              : `${subject}@${first}~${view.claimAfter}`;
        const ack = await this.publishOnce(subject, body, view.lastSeq, claim, headers.length === 0 ? undefined : headers);
        this.options.reader.wrote(ack);
        endAtRecord(view, ack, view.lastOffset + committed.length);
      } catch (error) {
        // Our own reservations are settled before the lookups of a next attempt read them: one
        // that took names an offset another record holds now, which reads as stale.
        await reserving;
        if (error instanceof PublishDuplicateError && (await this.isOurClaim(subject, first, body, error.seq, error instanceof DuplicateOfResend))) {
          await catchUp(this.options.reader, subject, view);
        } else if (error instanceof PublishDuplicateError || isWrongLastSequence(error)) {
          // Another writer holds this offset: catch up and decide again. The record that took it
          // has usually reached this store's feed already (a reducer's reaction loses to the
          // user's message it is about to fold), and then no read of the stream's end is needed.
          const took = fedPast(writer) ?? recordKeys(await catchUp(this.options.reader, subject, view));
          if (reserved !== undefined) held = heldAfterLoss(reserved, first, took);
          // The claim is held by a stored message, and still no record holds the offset: not a
          // writer's record but a message sent to squat the claim (from any subject). One
          // publish had refused every writer of the stream for the duplicate window.
          if (error instanceof PublishDuplicateError && error.seq !== 0 && view.lastOffset < first) {
            view.claimAfter = error.seq;
            view.squats = (view.squats ?? 0) + 1;
          }
          continue;
        } else {
          throw error;
        }
      }
      // Committed with a reservation that did not take: an entry of an earlier attempt that lost
      // (no record before `first` carries the key) now points at this record.
      if (reserving !== undefined && !(await reserving)) await pointKeysAt(this.options.index, streamPath, committedKeys, first);
      // This store wrote the stream's first record, so its whole history is in the index. When
      // the record could not say so, the marker does; the append does not wait for it: without
      // it, another store's keyed append reads the stream once and marks it.
      if (wasEmpty) {
        writer.indexed = true;
        if (!claimsIndex) void this.options.index.markIndexed(streamPath).catch(() => undefined);
      }
      return outcomes;
    }
    const error = new AgentRuntimeError("conflict", `Too many concurrent writers on ${streamPath}; retry.`, {
      retryable: true,
      details: { streamPath, attempts: this.options.maxAttempts },
    });
    return group.map(() => ({ kind: "error", error }));
  }

  /**
   * Makes sure the key index holds every key of the stream's history. An empty stream has
   * none (every writer reserves its keys); a stream whose first record names this index's
   * epoch, or that is marked, has them all; an older stream written before the index existed
   * is read once, here, and its keys recorded — the only whole-stream read a keyed append can
   * ever cause.
   */
  private async ensureIndexed(writer: StreamWriter, streamPath: string): Promise<void> {
    const { index, reader } = this.options;
    const first = await reader.firstHeader(writer.subject, KEYS_INDEXED_HEADER);
    if (first === undefined || first.value === index.epoch || (await index.isIndexed(streamPath))) {
      writer.indexed = true;
      return;
    }
    const last = await reader.last(writer.subject);
    if (last !== undefined) {
      for await (const record of reader.scan(writer.subject, 1, last.seq)) {
        for (const event of eventsOf(record)) if (event.idempotencyKey !== undefined) await index.record(streamPath, event.idempotencyKey, record.first);
      }
    }
    await this.markIndexed(writer, streamPath);
  }

  private async markIndexed(writer: StreamWriter, streamPath: string): Promise<void> {
    await this.options.index.markIndexed(streamPath);
    writer.indexed = true;
  }

  /**
   * After a "duplicate" answer: is the stored claim of `offset` ours (a resent publish whose
   * first send had landed)? The answer to a first send names another writer's claim: nothing to
   * read, unless that claim is still in flight (seq 0), which is waited for (looked for again a
   * few times) so that the catch-up that follows sees it.
   */
  private async isOurClaim(subject: string, offset: number, body: Uint8Array, seq: number, resent: boolean): Promise<boolean> {
    if (!resent && seq !== 0) return false;
    for (let look = 0; look < DUPLICATE_LOOKS; look++) {
      if (await this.isOurRecord(subject, offset, body)) return true;
      if (seq !== 0) return false;
      await delay(DUPLICATE_RETRY_MS * (look + 1));
    }
    return false;
  }

  /** Whether the record holding `offset` is exactly the one we published. */
  private async isOurRecord(subject: string, offset: number, body: Uint8Array): Promise<boolean> {
    const located = await this.options.reader.locate(subject, offset);
    if (located === undefined) return false;
    const record =
      located.first?.seq === located.startSeq ? located.first : located.last.seq === located.startSeq ? located.last : await this.options.reader.nextFrom(subject, located.startSeq);
    return record !== undefined && record.first === offset && Buffer.from(record.data).equals(Buffer.from(body));
  }

  /** Publishes one message; an unconfirmed publish is retried with the same Nats-Msg-Id, so it lands once. */
  private async publishOnce(subject: string, body: Uint8Array, lastSubjectSequence: number, msgID: string, headers?: PublishExpectations["headers"]): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.options.publisher.publish(subject, body, { msgID, lastSubjectSequence, duplicateIsError: true, ...(headers === undefined ? {} : { headers }) });
      } catch (error) {
        if (attempt < 2 && error instanceof PublishUnconfirmedError) continue;
        if (attempt > 0 && error instanceof PublishDuplicateError) throw new DuplicateOfResend(error.seq);
        throw error;
      }
    }
  }
}

/** A "duplicate" answer to a resend: the claim it names may be the first send's, ours. */
class DuplicateOfResend extends PublishDuplicateError {}

/** Takes the next group: at least one append, then as many as fit in one message. */
function takeGroup(pending: PendingAppend[]): PendingAppend[] {
  const group: PendingAppend[] = [];
  let events = 0;
  let bytes = 0;
  while (pending.length > 0) {
    const next = pending[0] as PendingAppend;
    const size = next.batch.bytes;
    if (group.length > 0 && (events + next.batch.inputs.length > MAX_BATCH_EVENTS || bytes + size > MAX_BATCH_BYTES)) break;
    group.push(pending.shift() as PendingAppend);
    events += next.batch.inputs.length;
    bytes += size;
  }
  return group;
}

/** Decides each append of a group in order, as if they were committed one after another. */
/** The group's keys riding with a settlement key of their batch, by that key (see checkKeys). */
function ridersOf(group: readonly PendingAppend[]): Map<string, string[]> {
  const riders = new Map<string, string[]>();
  for (const member of group) {
    for (const key of member.batch.keys) {
      const settlement = settlementKeyRiddenBy(key);
      if (settlement === undefined) continue;
      const list = riders.get(settlement);
      if (list === undefined) riders.set(settlement, [key]);
      else list.push(key);
    }
  }
  return riders;
}

/**
 * An append whose keys the caller vouched new at its head (`keysNewAtHead`) when the stream is
 * no longer at that head: it is refused with a conflict, and the caller decides again from the
 * newer records, in whose fold a key they carry shows. So neither the lookups nor a second try
 * are spent on telling it "duplicate" instead (AppendOptions.keysNewAtHead).
 */
function pastItsHead(member: PendingAppend, view: StreamViewState): boolean {
  const expected = member.options?.expectedLastOffset;
  return member.options?.keysNewAtHead === true && expected !== undefined && expected !== view.lastOffset;
}

function decideGroup(view: StreamViewState, group: readonly PendingAppend[], createdAt: string, verdicts: ReadonlyMap<string, KeyVerdict>) {
  const findTaken = (key: string): AgentEvent | undefined => {
    const verdict = verdicts.get(key);
    return verdict?.kind === "taken" ? verdict.event : undefined;
  };
  const outcomes: Outcome[] = [];
  const committed: AgentEvent[] = [];
  // The keys the index is to hold for the committed batches (their indexKeys, see prepareBatch).
  const committedKeys: string[] = [];
  const parts: string[] = [];
  const newKeys = new Map<string, AgentEvent>();
  for (const member of group) {
    try {
      const lastOffset = view.lastOffset + committed.length;
      const decision = decideAppend({ lastOffset, findKey: (k) => newKeys.get(k) ?? findTaken(k) }, member.batch, member.options, createdAt);
      if (decision.kind === "duplicate") {
        outcomes.push({ kind: "result", result: { status: "duplicate", events: decision.originals } });
        continue;
      }
      for (const e of decision.events) {
        committed.push(e);
        if (e.idempotencyKey !== undefined) newKeys.set(e.idempotencyKey, e);
      }
      committedKeys.push(...member.batch.indexKeys);
      parts.push(member.batch.eventsJson.slice(1, -1));
      outcomes.push({ kind: "result", result: { status: "committed", events: decision.events } });
    } catch (error) {
      outcomes.push({ kind: "error", error });
    }
  }
  return { outcomes, committed, committedKeys, parts };
}

/**
 * A record of the stream (its feed sequence, its last event's offset) as an idle writer's view,
 * when it is newer than the view: a stored record is on the stream's end or behind it, never
 * ahead, and offsets grow with sequences, so a newer record's offset is never lower.
 */
function takeRecord(writer: StreamWriter, sequence: number, lastOffset: number): void {
  if (writer.running || writer.pending.length > 0 || sequence <= writer.view.lastSeq) return;
  endAtRecord(writer.view, sequence, lastOffset);
}

/**
 * The entries a lost publish leaves ours: those it wrote (`written`, by revision) for a record
 * at `first`, when the record that took `first` — the stream's last record just caught up, or
 * the newest one its feed brought (`fedPast`) — carries none of their keys. Nobody else can
 * have stored such a key: a writer stores a key only after replacing its entry (which moves the
 * revision, so our compare-and-set fails) or by carrying a reservation pending for exactly its
 * own record's offset, which is `first` (key-check.ts). (Keys reserved alongside their publish
 * are only ever appended at the head, and an append at the head that lost is refused, never
 * retried here.) When that record is not the one at `first`, or carries a key, nothing is held
 * and the lookups decide.
 */
function heldAfterLoss(written: ReadonlyMap<string, number>, first: number, took: RecordKeys | undefined): Map<string, number> {
  if (written.size === 0 || took === undefined || took.first !== first) return new Map();
  if (took.keys.some((key) => written.has(key))) return new Map();
  return new Map(written);
}

/**
 * The newest record the feed brought, when it is past the writer's view: taken as the view (a
 * stored record is on the stream's end or behind it, never ahead; a publish onto a view still
 * behind fails again and catches up).
 */
function fedPast(writer: StreamWriter): RecordKeys | undefined {
  const fed = writer.fed;
  if (fed === undefined || fed.seq <= writer.view.lastSeq) return undefined;
  endAtRecord(writer.view, fed.seq, fed.lastOffset);
  return { first: (fed.events[0] as AgentEvent).offset, keys: idempotencyKeysOf(fed.events) };
}

function recordKeys(record: StoredRecord | undefined): RecordKeys | undefined {
  return record === undefined ? undefined : { first: record.first, keys: idempotencyKeysOf(eventsOf(record)) };
}
