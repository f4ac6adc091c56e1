// The safety net under the work queues: a work item is only a hint that the stream holds a
// request or a script nobody has finished, and a hint can be lost (a publish whose outcome was
// unknown during a NATS failover, an item acked by a worker that then failed, a re-publish
// swallowed by the queue's duplicate window). The stream is the truth, so the reducer re-issues
// the work for every open request and unsettled script of an agent whose stream has shown no
// progress for a while, backing off each time nothing happens, until the work settles or the
// request expires. A re-issued item that a worker is still serving costs a re-read: workers
// decide from the stream, and every settlement is keyed, so nothing lands twice.
// Pure: the shell passes the clock, the last sign of progress and how often it re-issued since.

import type { ReactionState } from "./state.ts";

/** Quiet time after which outstanding work is issued again (the first time; it doubles after). */
export const DEFAULT_REDRIVE_AFTER_MS = 30_000;
/** The longest wait between two re-issues of the same outstanding work. */
export const MAX_REDRIVE_INTERVAL_MS = 300_000;

export interface RedriveInput {
  readonly nowMs: number;
  /**
   * The last sign that the work is moving (epoch ms): the stream's last event, or a chunk of
   * a streaming reply on the live lane, whichever is later.
   */
  readonly progressAtMs: number;
  /** Re-issues since that progress (0 the first time). */
  readonly redrivesSinceProgress: number;
  readonly afterMs?: number;
}

export interface Redrive {
  /** The open request to hand to the drivers again, or null. */
  readonly requestOffset: number | null;
  /** The unsettled scripts to hand to the hosts again. */
  readonly scripts: readonly { readonly executionId: string; readonly requestedOffset: number }[];
  /** When to look again (epoch ms), or null when nothing is outstanding. */
  readonly checkAtMs: number | null;
}

const NOTHING: Redrive = { requestOffset: null, scripts: [], checkAtMs: null };

/** The quiet time before re-issue number `n` (0-based): afterMs, doubling, capped. */
export function redriveIntervalMs(n: number, afterMs = DEFAULT_REDRIVE_AFTER_MS): number {
  return Math.min(MAX_REDRIVE_INTERVAL_MS, afterMs * 2 ** Math.min(n, 16));
}

/** What outstanding work to issue again now, and when to look next. */
export function workToRedrive(state: ReactionState, input: RedriveInput): Redrive {
  const open = state.openRequest;
  const scripts = state.activeScriptExecutions;
  if (open === null && scripts.length === 0) return NOTHING;
  const { nowMs, redrivesSinceProgress: n } = input;
  // Re-issue number n is due once the stream has been quiet for the sum of the intervals
  // before it, so the waits between re-issues double.
  let dueAtMs = input.progressAtMs;
  for (let i = 0; i <= n; i += 1) dueAtMs += redriveIntervalMs(i, input.afterMs);
  if (nowMs < dueAtMs) return { ...NOTHING, checkAtMs: dueAtMs };
  return {
    requestOffset: open?.requestedAtOffset ?? null,
    scripts: scripts.map((s) => ({ executionId: s.executionId, requestedOffset: s.requestedOffset })),
    checkAtMs: nowMs + redriveIntervalMs(n + 1, input.afterMs),
  };
}
