// A writer's caught-up view of one agent stream: last offset, last JetStream sequence, and
// (once a keyed append needs them) every idempotency key ever written. Views are only ever
// behind the truth, never ahead, and the optimistic publish check detects "behind".

import type { AgentEvent } from "@agentrt/contract";
import { type RecordReader, type StoredRecord, eventsOf, lastOffsetOf } from "./records.ts";

export interface StreamViewState {
  lastOffset: number;
  lastSeq: number;
  /** Every keyed event of the stream; undefined until a keyed append first needs it. */
  keys: Map<string, AgentEvent> | undefined;
}

export function emptyView(): StreamViewState {
  return { lastOffset: 0, lastSeq: 0, keys: undefined };
}

function applyRecord(view: StreamViewState, record: StoredRecord): void {
  if (record.seq <= view.lastSeq) return;
  view.lastSeq = record.seq;
  view.lastOffset = Math.max(view.lastOffset, lastOffsetOf(record));
  if (view.keys !== undefined) {
    for (const event of eventsOf(record)) if (event.idempotencyKey !== undefined) view.keys.set(event.idempotencyKey, event);
  }
}

/**
 * Brings a view up to the stream's current end. Without keys one `last_by_subj` suffices;
 * with keys every new record is read (direct gets, or a consumer for a long gap).
 */
export async function catchUp(reader: RecordReader, subject: string, view: StreamViewState): Promise<void> {
  if (view.keys === undefined) {
    const last = await reader.last(subject);
    if (last !== undefined) applyRecord(view, last);
    return;
  }
  const last = await reader.last(subject);
  if (last === undefined || last.seq <= view.lastSeq) return;
  for await (const record of reader.scan(subject, view.lastSeq + 1, last.seq)) applyRecord(view, record);
}

/** Starts tracking keys: reads the stream's whole history once. */
export async function loadKeys(reader: RecordReader, subject: string, view: StreamViewState): Promise<void> {
  view.keys = new Map();
  view.lastOffset = 0;
  view.lastSeq = 0;
  await catchUp(reader, subject, view);
}
