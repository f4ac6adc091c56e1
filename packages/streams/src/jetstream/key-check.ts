// Deciding what the key index says about the keys of an append, with bounded reads: a lookup
// per key, plus (only for a key that has a reservation) one catch-up and one located record.
// A reservation names the record meant to carry the key:
//   - that record exists and carries the key     → the key is taken: a duplicate;
//   - that offset is taken by a record without it → stale (its writer lost): replace it (CAS);
//   - that offset is the next one to be written   → pending: whoever commits there carries the
//     key, so a writer whose next record starts there may carry it too (the publish's
//     expected-last-sequence check lets only one of them win, and the loser then finds it);
//   - that offset is further past the stream's end → impossible, so stale: replace it (CAS).
//     A writer reserves the offset right after its view of the stream, and views are never
//     ahead of the stream, so no writer can ever publish a record there. Such an entry is
//     one a NATS user wrote by hand (every service's user may write the bucket: the gateway's
//     reserved `agent/settle/R` at offset 999 999 999, and the driver's settlement and the
//     reducer's expiry were refused for good), or one left by a stream an operator purged.

import { type AgentEvent, AgentRuntimeError } from "@agentrt/contract";
import type { KeyIndex } from "./key-index.ts";
import { type RecordReader, eventsOf } from "./records.ts";
import { type StreamViewState, catchUp } from "./stream-view.ts";

export type KeyVerdict =
  | { readonly kind: "absent" }
  | { readonly kind: "stale"; readonly revision: number }
  | { readonly kind: "pending"; readonly first: number }
  | { readonly kind: "taken"; readonly event: AgentEvent };

export interface KeyCheck {
  readonly verdicts: Map<string, KeyVerdict>;
}

export async function checkKeys(
  deps: { readonly index: KeyIndex; readonly reader: RecordReader },
  streamPath: string,
  subject: string,
  view: StreamViewState,
  keys: readonly string[],
  /**
   * Keys riding with a settlement key among `keys` (settlementKeyRiddenBy), by that key: not
   * looked up, they are taken exactly when it is, by the events of the record that carries it.
   */
  riders: ReadonlyMap<string, readonly string[]> = new Map(),
): Promise<KeyCheck> {
  const found = await Promise.all(keys.map(async (key) => ({ key, reservation: await deps.index.lookup(streamPath, key) })));
  const verdicts = new Map<string, KeyVerdict>();
  // Looked up first, then caught up: a record committed in between only makes the truth newer.
  // So the view is at least where the stream was when each reservation was written, and a
  // reservation's writer can publish at most at the offset right after the view: one further
  // ahead is impossible, and replaced (compare-and-set on the revision looked up, so an entry a
  // writer changed meanwhile is not). The catch-up reads the stream's end as every writer does
  // (through the leader when the stream is replicated). Such a reservation used to send the
  // append to catch up and look again until it gave up: one written by hand refused every
  // append of its key, for good.
  if (found.some((f) => f.reservation !== undefined)) await catchUp(deps.reader, subject, view);
  for (const { key, reservation } of found) {
    if (reservation === undefined) {
      verdicts.set(key, { kind: "absent" });
    } else if (reservation.first < 1 || reservation.first > view.lastOffset + 1) {
      verdicts.set(key, { kind: "stale", revision: reservation.revision });
    } else if (reservation.first === view.lastOffset + 1) {
      verdicts.set(key, { kind: "pending", first: reservation.first });
    } else {
      const events = await eventsAt(deps.reader, subject, reservation.first);
      const original = events.find((e) => e.idempotencyKey === key);
      verdicts.set(key, original === undefined ? { kind: "stale", revision: reservation.revision } : { kind: "taken", event: original });
      if (original === undefined) continue;
      for (const rider of riders.get(key) ?? []) {
        const event = events.find((e) => e.idempotencyKey === rider);
        if (event !== undefined) verdicts.set(rider, { kind: "taken", event });
      }
    }
  }
  return { verdicts };
}

/** The events of the record holding `offset` (none when there is no such record). */
export async function eventsAt(reader: RecordReader, subject: string, offset: number): Promise<readonly AgentEvent[]> {
  const located = await reader.locate(subject, offset);
  if (located === undefined) return [];
  const record = located.first?.seq === located.startSeq ? located.first : located.last.seq === located.startSeq ? located.last : await reader.nextFrom(subject, located.startSeq);
  return record === undefined ? [] : eventsOf(record);
}

/**
 * Reserves every key of a record about to be published at `first`. Resolves to the revisions of
 * the entries it wrote (a pending reservation for `first` is carried as it is, nothing written),
 * or undefined when another writer moved a reservation first (check again), or a pending one
 * is not for `first`.
 */
export async function reserveKeys(index: KeyIndex, streamPath: string, keys: readonly string[], verdicts: Map<string, KeyVerdict>, first: number): Promise<Map<string, number> | undefined> {
  const written = new Map<string, number>();
  const results = await Promise.all(
    keys.map(async (key) => {
      const verdict = verdicts.get(key) ?? { kind: "absent" };
      switch (verdict.kind) {
        case "absent":
        case "stale": {
          const revision = await index.reserve(streamPath, key, first, verdict.kind === "stale" ? verdict.revision : undefined);
          if (revision !== undefined) written.set(key, revision);
          return revision !== undefined;
        }
        case "pending":
          return verdict.first === first;
        case "taken":
          return false;
        default: {
          const never: never = verdict;
          return never;
        }
      }
    }),
  );
  return results.every(Boolean) ? written : undefined;
}

/** A reservation that would not settle on the committed record after this many tries. */
const REPOINT_ATTEMPTS = 8;

/**
 * Makes each key's reservation name the record committed at `first` (which carries the key):
 * after an append whose reservations were sent together with its publish (`keysNewAtHead`)
 * and did not all take, because an earlier attempt that lost had left an entry. Only such an
 * entry can be there (the appender vouched that no record before `first` carries the key), so
 * it is replaced, compare-and-set; an entry that already names `first` is left as it is.
 */
export async function pointKeysAt(index: KeyIndex, streamPath: string, keys: readonly string[], first: number): Promise<void> {
  await Promise.all(
    keys.map(async (key) => {
      for (let attempt = 0; attempt < REPOINT_ATTEMPTS; attempt++) {
        const reservation = await index.lookup(streamPath, key);
        if (reservation?.first === first) return;
        if ((await index.reserve(streamPath, key, first, reservation?.revision)) !== undefined) return;
      }
      throw new AgentRuntimeError("unavailable", `The reservation of key ${JSON.stringify(key)} on ${streamPath} kept changing; it does not name offset ${first}, which committed; retry.`, {
        retryable: true,
        details: { streamPath, key, first, outcome: "committed" },
      });
    }),
  );
}
