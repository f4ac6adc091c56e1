// A writer's caught-up view of one agent stream: last offset and last JetStream sequence.
// Views are only ever behind the truth, never ahead, and the optimistic publish check detects
// "behind". Idempotency keys are not held here: the key index (key-index.ts) answers for them.

import { type RecordReader, type StoredRecord, lastOffsetOf } from "./records.ts";

export interface StreamViewState {
  lastOffset: number;
  lastSeq: number;
  /**
   * A message holding the plain claim of the next offset that is not the record at it (one
   * readers pass over at the stream's end, RecordReader.tail, or a message id published to
   * squat the offset): the next record claims its offset under an id naming that message too.
   * Writers racing for the offset see the same message, so still only one claim is stored.
   */
  claimAfter?: number | undefined;
  /**
   * Claims of the next offset found squatted since the view last moved to a record. Past one,
   * the claim also carries a random part: each id a squatter could foresee (`…~<the seq of its
   * last message>`) it could publish first, and a chain of 210 such messages refused every
   * append to an agent for the whole duplicate window (red-team). Honest writers racing for the
   * offset then no longer share an id, and only the expected last sequence keeps them apart.
   */
  squats?: number;
}

export function emptyView(): StreamViewState {
  return { lastOffset: 0, lastSeq: 0, claimAfter: undefined, squats: 0 };
}

/** Takes a record as the end of the view: its sequence and last offset. */
export function endAtRecord(view: StreamViewState, seq: number, lastOffset: number): void {
  view.lastSeq = seq;
  view.lastOffset = Math.max(view.lastOffset, lastOffset);
  view.claimAfter = undefined;
  view.squats = 0;
}

function applyRecord(view: StreamViewState, record: StoredRecord): void {
  if (record.seq <= view.lastSeq) return;
  endAtRecord(view, record.seq, lastOffsetOf(record));
}

/**
 * Brings a view up to the stream's current end: one `last_by_subj`, whatever the stream's
 * length. Resolves to that last record (undefined: the stream is empty). A message past it
 * that is not a record (RecordReader.tail) moves the view's sequence, not its offset: the next
 * record is published after that message and still continues the offsets.
 */
export async function catchUp(reader: RecordReader, subject: string, view: StreamViewState): Promise<StoredRecord | undefined> {
  const tail = await reader.tail(subject);
  if (tail === undefined) return undefined;
  if (tail.record !== undefined) applyRecord(view, tail.record);
  if (tail.seq > view.lastSeq) {
    view.lastSeq = tail.seq;
    view.claimAfter = tail.seq;
  }
  return tail.record;
}
