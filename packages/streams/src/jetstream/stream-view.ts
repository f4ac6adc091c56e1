// A writer's caught-up view of one agent stream: last offset and last JetStream sequence.
// Views are only ever behind the truth, never ahead, and the optimistic publish check detects
// "behind". Idempotency keys are not held here: the key index (key-index.ts) answers for them.

import { type RecordReader, type StoredRecord, lastOffsetOf } from "./records.ts";

export interface StreamViewState {
  lastOffset: number;
  lastSeq: number;
}

export function emptyView(): StreamViewState {
  return { lastOffset: 0, lastSeq: 0 };
}

function applyRecord(view: StreamViewState, record: StoredRecord): void {
  if (record.seq <= view.lastSeq) return;
  view.lastSeq = record.seq;
  view.lastOffset = Math.max(view.lastOffset, lastOffsetOf(record));
}

/**
 * Brings a view up to the stream's current end: one `last_by_subj`, whatever the stream's
 * length. Resolves to that last record (undefined: the stream is empty).
 */
export async function catchUp(reader: RecordReader, subject: string, view: StreamViewState): Promise<StoredRecord | undefined> {
  const last = await reader.last(subject);
  if (last !== undefined) applyRecord(view, last);
  return last;
}
