// The pure core both stores share: validating a batch at the boundary, encoding it as the one
// record a commit writes, and deciding what an append does against a stream's current view
// (commit, duplicate, conflict). No IO here: the adapters supply the view and the clock.

import {
  type AgentEvent,
  AgentRuntimeError,
  ContractViolationError,
  type EventInput,
  MAX_STREAM_PATH_LENGTH,
  parseEventInput,
  parseStoredEvent,
  parseStreamPath,
  settlementKeyRiddenBy,
} from "@agentrt/contract";
import { type AppendOptions, DEFAULT_MAX_EVENT_BYTES, MAX_BATCH_BYTES, MAX_BATCH_EVENTS, type ReadOptions } from "./event-store.ts";

const decoder = new TextDecoder();

export interface PreparedBatch {
  readonly streamPath: string;
  readonly inputs: readonly EventInput[];
  /** True when every event rides the live lane (a batch is never mixed). */
  readonly ephemeral: boolean;
  readonly keys: readonly string[];
  /**
   * The keys a store with a key index checks and reserves: all but those riding with a
   * settlement key of the same batch (`settlementKeyRiddenBy`), which is unique for them.
   */
  readonly indexKeys: readonly string[];
  /** Each event as it is stored (JSON), computed once so size checks and commits agree. */
  readonly eventJson: readonly string[];
  /** The events as they are stored: `eventJson` as one JSON array. */
  readonly eventsJson: string;
  /** Worst-case encoded size of the record (UTF-8 bytes). */
  readonly bytes: number;
}

/**
 * Refuses any event whose JSON (as sent: type, payload, key) takes more than `maxEventBytes`
 * UTF-8 bytes, naming its index, type and the limit. Large data belongs in files; the gateway
 * runs this before the store does, and the store runs it again before publishing.
 */
export function assertEventSizes(events: readonly unknown[], maxEventBytes: number): void {
  events.forEach((event, index) => {
    const bytes = jsonBytes(event);
    if (bytes > maxEventBytes) throw eventTooLarge(event, index, bytes, maxEventBytes);
  });
}

function eventTooLarge(event: unknown, index: number, bytes: number, maxEventBytes: number): ContractViolationError {
  const type = typeof event === "object" && event !== null && typeof (event as { type?: unknown }).type === "string" ? (event as { type: string }).type : undefined;
  return new ContractViolationError(
    "event_too_large",
    `events[${index}]${type === undefined ? "" : ` (${type})`} takes ${bytes} bytes of JSON; an event may take at most ${maxEventBytes}. Put large data in a file and reference it.`,
    [{ path: `events[${index}]`, message: `at most ${maxEventBytes} bytes of JSON` }],
    { index, ...(type === undefined ? {} : { type }), bytes, maxEventBytes },
  );
}

/** UTF-8 bytes of a value's JSON (0 for something JSON cannot encode). */
export function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value) as string | undefined;
  return text === undefined ? 0 : Buffer.byteLength(text);
}

/** Validates path, size and every event; throws a ContractViolationError naming the problem. */
export function prepareBatch(streamPath: unknown, events: readonly unknown[], maxEventBytes: number = DEFAULT_MAX_EVENT_BYTES): PreparedBatch {
  const path = parseStreamPath(streamPath);
  if (!Array.isArray(events)) {
    throw new ContractViolationError("invalid_event", "events must be an array of event inputs.", [{ path: "events", message: "must be an array" }]);
  }
  if (events.length === 0) {
    throw new ContractViolationError("invalid_event", "A batch needs at least one event.", [{ path: "events", message: "must not be empty" }]);
  }
  if (events.length > MAX_BATCH_EVENTS) {
    throw new ContractViolationError(
      "batch_too_large",
      `A batch holds at most ${MAX_BATCH_EVENTS} events; this one has ${events.length}.`,
      [{ path: "events", message: `at most ${MAX_BATCH_EVENTS} events` }],
      { count: events.length, maxEvents: MAX_BATCH_EVENTS },
    );
  }
  const inputs = events.map((raw, index) => parseEventInput(raw, index));
  // Each event's JSON once: its size is checked, and the batch's JSON is made of them.
  const eventJson = inputs.map((input, index) => {
    const json = JSON.stringify(input);
    const bytes = Buffer.byteLength(json);
    if (bytes > maxEventBytes) throw eventTooLarge(input, index, bytes, maxEventBytes);
    return json;
  });
  const ephemeralCount = inputs.filter((e) => e.ephemeral === true).length;
  if (ephemeralCount > 0 && ephemeralCount < inputs.length) {
    throw new ContractViolationError(
      "ephemeral_misuse",
      "A batch is either all live-lane (ephemeral) events or all durable events; append them separately.",
      inputs.map((e, i) => ({ path: `events[${i}].ephemeral`, message: e.ephemeral === true ? "ephemeral" : "durable" })),
    );
  }
  const keys: string[] = [];
  const seen = new Map<string, number>();
  inputs.forEach((input, index) => {
    if (input.idempotencyKey === undefined || input.ephemeral === true) return;
    const earlier = seen.get(input.idempotencyKey);
    if (earlier !== undefined) {
      throw new ContractViolationError(
        "invalid_event",
        `events[${index}].idempotencyKey ${JSON.stringify(input.idempotencyKey)} repeats events[${earlier}]'s; keys are unique within a batch.`,
        [{ path: `events[${index}].idempotencyKey`, message: "duplicate key within the batch" }],
      );
    }
    seen.set(input.idempotencyKey, index);
    keys.push(input.idempotencyKey);
  });
  const indexKeys = keys.filter((key) => {
    const settlement = settlementKeyRiddenBy(key);
    if (settlement === undefined) return true;
    if (seen.has(settlement)) return false;
    const index = seen.get(key) as number;
    throw new ContractViolationError(
      "invalid_event",
      `events[${index}].idempotencyKey ${JSON.stringify(key)} is only appended in one batch with its request's settlement, ${JSON.stringify(settlement)}; this batch does not carry it.`,
      [{ path: `events[${index}].idempotencyKey`, message: `must travel with ${settlement}` }],
    );
  });
  // Parsed durable inputs are exactly {type, payload, idempotencyKey?}: the stored form.
  const eventsJson = `[${eventJson.join(",")}]`;
  const bytes = Buffer.byteLength(eventsJson) + Buffer.byteLength(path) + RECORD_ENVELOPE_BYTES;
  if (bytes > MAX_BATCH_BYTES) {
    throw new ContractViolationError(
      "batch_too_large",
      `A batch encodes to at most ${MAX_BATCH_BYTES} bytes; this one takes ${bytes}.`,
      [{ path: "events", message: `at most ${MAX_BATCH_BYTES} encoded bytes` }],
      { bytes, maxBytes: MAX_BATCH_BYTES },
    );
  }
  return { streamPath: path, inputs, ephemeral: ephemeralCount > 0, keys, indexKeys, eventJson, eventsJson, bytes };
}

/** Worst-case bytes of a record around its path and events: the largest offsets and a full-length timestamp. */
const RECORD_ENVELOPE_BYTES = recordJson("", Number.MAX_SAFE_INTEGER, MAX_BATCH_EVENTS, "+275760-09-13T00:00:00.000Z", "").length + 2;

/**
 * The stored record. `first` and `n` (event count) lead, so a reader can locate offsets from
 * the first bytes of a message without parsing its events. `eventsInner` is the events' JSON
 * without the surrounding brackets (so several appends' events can be concatenated).
 */
export function recordJson(streamPath: string, firstOffset: number, count: number, createdAt: string, eventsInner: string): string {
  return `{"v":1,"first":${firstOffset},"n":${count},"at":"${createdAt}","path":"${streamPath}","events":[${eventsInner}]}`;
}

const RECORD_HEAD = /^\{"v":1,"first":(\d+),"n":(\d+),"at":"[^"]{1,40}","path":"([^"]{1,600})","events":\[/;
/** Enough leading bytes for a head with the longest stream path. */
const RECORD_HEAD_BYTES = 128 + MAX_STREAM_PATH_LENGTH;

/** First offset, event count and stream path of a stored record, read from its first bytes. */
export function readRecordHead(bytes: Uint8Array): { first: number; count: number; path: string } | undefined {
  const match = RECORD_HEAD.exec(decoder.decode(bytes.subarray(0, RECORD_HEAD_BYTES)));
  if (match === null) return undefined;
  return { first: Number(match[1]), count: Number(match[2]), path: match[3] as string };
}

// --- the committed record ----------------------------------------------------------------

/** One committed batch as stored: the events and the offset of the first one. */
export interface BatchRecord {
  readonly v: 1;
  readonly path: string;
  readonly first: number;
  readonly at: string;
  readonly n: number;
  readonly events: readonly { readonly type: string; readonly payload: unknown; readonly idempotencyKey?: string }[];
}

export function decodeRecordJson(bytes: Uint8Array): BatchRecord | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof raw !== "object" || raw === null) return undefined;
  const r = raw as Partial<BatchRecord>;
  if (r.v !== 1 || typeof r.path !== "string" || typeof r.first !== "number" || typeof r.at !== "string" || !Array.isArray(r.events)) return undefined;
  return r as BatchRecord;
}

/**
 * The events of a record, each parsed like any input from the wire. An event this version
 * cannot parse (written by a newer one) is skipped, as the contract asks of readers.
 */
export function recordEvents(record: BatchRecord): AgentEvent[] {
  const events: AgentEvent[] = [];
  record.events.forEach((e, i) => {
    // Stored by a writer of ours, an event is an object; anything else is not one to read.
    if (typeof e !== "object" || e === null) return;
    const parsed = parseStoredEvent({
      streamPath: record.path,
      offset: record.first + i,
      createdAt: record.at,
      type: e.type,
      payload: e.payload,
      ...(typeof e.idempotencyKey === "string" ? { idempotencyKey: e.idempotencyKey } : {}),
    });
    if (parsed.ok) events.push(parsed.event);
  });
  return events;
}

// --- deciding an append ------------------------------------------------------------------

export interface StreamView {
  readonly lastOffset: number;
  findKey(key: string): AgentEvent | undefined;
}

export type AppendDecision =
  | { readonly kind: "duplicate"; readonly originals: AgentEvent[] }
  | { readonly kind: "commit"; readonly events: AgentEvent[] };

/**
 * Keys are checked before `expectedLastOffset`: a retried keyed batch that already committed
 * reports `duplicate` (what the retrier needs) rather than a conflict with its own write.
 */
export function decideAppend(view: StreamView, batch: PreparedBatch, options: AppendOptions | undefined, createdAt: string): AppendDecision {
  if (batch.keys.length > 0) {
    const originals = batch.keys.map((k) => view.findKey(k)).filter((e): e is AgentEvent => e !== undefined);
    if (originals.length > 0) return { kind: "duplicate", originals };
  }
  const expected = options?.expectedLastOffset;
  if (expected !== undefined && expected !== view.lastOffset) {
    throw new AgentRuntimeError(
      "conflict",
      `Stream ${batch.streamPath} is at offset ${view.lastOffset}, not the expected ${expected}; re-read and retry.`,
      { details: { streamPath: batch.streamPath, expectedLastOffset: expected, lastOffset: view.lastOffset } },
    );
  }
  return { kind: "commit", events: stampEvents(batch, view.lastOffset + 1, createdAt) };
}

export function stampEvents(batch: PreparedBatch, firstOffset: number, createdAt: string): AgentEvent[] {
  return batch.inputs.map((input, i) => {
    const event: Record<string, unknown> = { streamPath: batch.streamPath, offset: firstOffset + i, createdAt, type: input.type, payload: input.payload };
    if (input.idempotencyKey !== undefined) event.idempotencyKey = input.idempotencyKey;
    return event as unknown as AgentEvent;
  });
}

/** The `knownLastOffset` a caller vouches for on an ephemeral append, checked; undefined when absent. */
export function knownLastOffsetOf(options: AppendOptions | undefined): number | undefined {
  const known = options?.knownLastOffset;
  if (known === undefined) return undefined;
  if (!Number.isInteger(known) || known < 0) {
    throw new ContractViolationError("invalid_event", `knownLastOffset must be a non-negative integer, got ${String(known)}.`, [
      { path: "knownLastOffset", message: "must be a non-negative integer" },
    ]);
  }
  return known;
}

/** Live-lane events carry the stream's last durable offset (they sit "after" it) and `ephemeral: true`. */
export function ephemeralEvents(batch: PreparedBatch, lastDurableOffset: number, createdAt: string): AgentEvent[] {
  return batch.inputs.map(
    (input) =>
      ({
        streamPath: batch.streamPath,
        offset: lastDurableOffset,
        createdAt,
        type: input.type,
        payload: input.payload,
        ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey }),
        ephemeral: true,
      }) as AgentEvent,
  );
}

/**
 * `ephemeralEvents` as the JSON the live lane carries, made from the batch's encoded events
 * instead of encoding their payloads again: each stored input is `{"type",…,"ephemeral":true}`
 * (parseEventInput's order), so the envelope's fields go in front of it.
 */
export function ephemeralEventsJson(batch: PreparedBatch, lastDurableOffset: number, createdAt: string): string {
  const envelope = `{"streamPath":${JSON.stringify(batch.streamPath)},"offset":${lastDurableOffset},"createdAt":${JSON.stringify(createdAt)},`;
  return `[${batch.eventJson.map((json) => envelope + json.slice(1)).join(",")}]`;
}

// --- read options ------------------------------------------------------------------------

export function parseReadOptions(options: ReadOptions | undefined): { fromOffset: number; limit: number; maxBytes: number } {
  const fromOffset = options?.fromOffset ?? 1;
  const limit = options?.limit ?? Number.POSITIVE_INFINITY;
  const maxBytes = options?.maxBytes ?? Number.POSITIVE_INFINITY;
  if (maxBytes !== Number.POSITIVE_INFINITY && (!Number.isInteger(maxBytes) || maxBytes < 1)) {
    throw new ContractViolationError("invalid_event", `maxBytes must be a positive integer, got ${String(maxBytes)}.`, [
      { path: "maxBytes", message: "must be a positive integer" },
    ]);
  }
  if (!Number.isInteger(fromOffset) || fromOffset < 1) {
    throw new ContractViolationError("offset_out_of_range", `fromOffset must be an integer ≥ 1, got ${String(fromOffset)}.`, [
      { path: "fromOffset", message: "must be an integer ≥ 1" },
    ]);
  }
  if (limit !== Number.POSITIVE_INFINITY && (!Number.isInteger(limit) || limit < 0)) {
    throw new ContractViolationError("invalid_event", `limit must be a non-negative integer, got ${String(limit)}.`, [
      { path: "limit", message: "must be a non-negative integer" },
    ]);
  }
  options?.signal?.throwIfAborted();
  return { fromOffset, limit, maxBytes };
}

/**
 * A read page's byte budget: takes events while their JSON fits in `maxBytes`, and always the
 * first one (a page makes progress even past an event bigger than the budget).
 */
export class PageBudget {
  private used = 0;
  private taken = 0;
  constructor(private readonly maxBytes: number) {}

  /**
   * True when `event` still fits (and counts it); false means the page ends before it.
   * `bytes` may be given when known without encoding the event again (a one-event record's size).
   */
  admit(event: AgentEvent, bytes = this.maxBytes === Number.POSITIVE_INFINITY ? 0 : jsonBytes(event)): boolean {
    if (this.maxBytes === Number.POSITIVE_INFINITY) return true;
    if (this.taken > 0 && this.used + bytes > this.maxBytes) return false;
    this.used += bytes;
    this.taken++;
    return true;
  }
}

export function parsePartitions(partitions: readonly number[] | undefined, partitionCount: number): number[] {
  const all = Array.from({ length: partitionCount }, (_, i) => i);
  if (partitions === undefined) return all;
  for (const p of partitions) {
    if (!Number.isInteger(p) || p < 0 || p >= partitionCount) {
      throw new ContractViolationError("invalid_event", `partition ${String(p)} is not in 0..${partitionCount - 1}.`, [
        { path: "partitions", message: `each partition is an integer in 0..${partitionCount - 1}` },
      ]);
    }
  }
  return [...new Set(partitions)].sort((a, b) => a - b);
}
