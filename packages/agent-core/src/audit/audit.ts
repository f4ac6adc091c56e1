// The stream audit: checks one agent stream's invariants from its events alone, so anyone can
// verify a durable runtime's claims on their own streams (`agents audit`, GET …/audit) and the
// chaos and soak tests check exactly what users can. Pure: the events in, a report out.
//
// Violations break a guarantee; notes explain why something is legitimately open (a turn
// still pending, an agent paused or given up, a script still running, a cache reset by an
// explicit rewrite). Given the current time, a turn or request that is overdue by more than a
// grace period is a violation: the runtime failed to serve it.

import type { AgentEvent } from "@agentrt/contract";
import { requestDueAtMs } from "../decide.ts";
import { initialAgentState, StepwiseFold } from "../fold/fold.ts";
import type { ChatMessage } from "../render/items.ts";
import { IncrementalRequestRenderer } from "../render/incremental.ts";
import type { AgentState, ReactionState } from "../state.ts";

export type AuditRule =
  | "offsets-dense"
  | "idempotency-key-unique"
  | "request-settled-once"
  | "settlement-names-open-request"
  | "script-started-once"
  | "script-settled-once"
  | "script-lifecycle-order"
  | "reply-once"
  | "no-reply-for-failed-request"
  | "cache-prefix"
  | "user-message-covered"
  | "request-overdue";

export type AuditNoteKind = "turn-pending" | "paused" | "gave-up" | "not-born" | "script-running" | "request-open" | "cache-reset";

export interface AuditFinding<K extends string> {
  readonly rule: K;
  readonly message: string;
  /** The offsets involved, in stream order. */
  readonly offsets: readonly number[];
}

export interface AuditReport {
  readonly streamPath: string;
  readonly events: number;
  readonly firstOffset: number;
  readonly lastOffset: number;
  /** Requests the fold opened (stray ones are ignored by every reader, as the contract says). */
  readonly requests: number;
  readonly settlements: number;
  readonly scripts: number;
  /** Consecutive request pairs whose prefix property was checked by rendering them. */
  readonly prefixPairsChecked: number;
  readonly violations: readonly AuditFinding<AuditRule>[];
  readonly notes: readonly AuditFinding<AuditNoteKind>[];
}

interface ScriptRecord {
  requested?: number;
  started: number[];
  settled: number[];
}

export interface AuditOptions {
  /** The current time: overdue turns and requests become violations (without it, notes). */
  readonly nowMs?: number;
  /** How late a due turn or an expired request may be before it is a violation (default 30 s). */
  readonly graceMs?: number;
  /** How a request's messages are rendered (default: the core's incremental renderer). */
  readonly render?: (state: AgentState) => ChatMessage[];
}

const isStrictPrefix = (a: readonly ChatMessage[], b: readonly ChatMessage[]): boolean =>
  a.length < b.length && a.every((m, i) => m.role === b[i]?.role && m.content === b[i]?.content);

function firstDifference(a: readonly ChatMessage[], b: readonly ChatMessage[]): number {
  const i = a.findIndex((m, j) => m.role !== b[j]?.role || m.content !== b[j]?.content);
  return i === -1 ? a.length : i;
}

/** Audits the durable events of one stream, read from its first offset. */
export function auditAgentStream(events: readonly AgentEvent[], options: AuditOptions = {}): AuditReport {
  const audit = new StreamAudit(options);
  for (const e of events) audit.add(e);
  return audit.report();
}

/**
 * The audit taken one event at a time, in offset order, so a long stream is audited page by page
 * without holding its events: what it keeps is the fold, the rendered messages of the last
 * request, and per-offset bookkeeping (keys, requests, replies, scripts).
 */
export class StreamAudit {
  private streamPath: string | undefined;
  private count = 0;
  private firstOffset = 0;
  private lastOffset = 0;
  private readonly violations: AuditFinding<AuditRule>[] = [];
  private readonly notes: AuditFinding<AuditNoteKind>[] = [];
  private readonly keyOffsets = new Map<string, number[]>();
  private readonly render: (state: AgentState) => ChatMessage[];
  /** The stream's fold, event by event (one draft: a long stream costs no copy of its context per event). */
  private fold: StepwiseFold | undefined;
  private readonly opened: number[] = [];
  private readonly settledBy = new Map<number, number[]>();
  private readonly failedOrCancelled = new Set<number>();
  private readonly repliesBy = new Map<number, number[]>();
  private readonly scripts = new Map<string, ScriptRecord>();
  private readonly userMessages: number[] = [];
  private previous: { offset: number; messages: ChatMessage[]; revision: number } | undefined;
  private prefixPairsChecked = 0;
  private settlements = 0;

  constructor(private readonly options: AuditOptions = {}) {
    const incremental = new IncrementalRequestRenderer();
    this.render = options.render ?? ((s: AgentState) => incremental.render(s));
  }

  private violate(rule: AuditRule, message: string, offsets: number[]): void {
    this.violations.push({ rule, message, offsets });
  }

  private script(id: string): ScriptRecord {
    return this.scripts.get(id) ?? (this.scripts.set(id, { started: [], settled: [] }).get(id) as ScriptRecord);
  }

  /** Takes the stream's next event. */
  add(e: AgentEvent): void {
    if (this.streamPath === undefined) {
      this.streamPath = e.streamPath;
      this.firstOffset = e.offset;
      this.fold = new StepwiseFold(initialAgentState(e.streamPath));
    }
    // Offsets dense from the first one read (each checked against the one before it, so one
    // gap is reported once, not again for every event after it).
    const expected = this.count === 0 ? this.firstOffset : this.lastOffset + 1;
    if (e.offset !== expected) {
      // Readers pass over an event of a type or shape they cannot read (a newer writer's): it
      // is not audited, and the report cannot vouch for the stream there.
      const why = e.offset > expected ? " (missing, or events this version cannot read: a newer writer's type or field)" : "";
      this.violate("offsets-dense", `expected offset ${expected}, found ${e.offset}${why}`, [e.offset]);
    }
    this.count += 1;
    this.lastOffset = e.offset;
    if (e.idempotencyKey !== undefined) this.keyOffsets.set(e.idempotencyKey, [...(this.keyOffsets.get(e.idempotencyKey) ?? []), e.offset]);

    // Fold the stream once, watching requests, settlements, scripts, replies and renders.
    const fold = this.fold as StepwiseFold;
    const { before, after: state } = fold.apply(e);
    switch (e.type) {
      case "agent/llm-request-requested": {
        if (state.openRequest?.requestedAtOffset !== e.offset || before.openRequest !== null) break;
        this.opened.push(e.offset);
        const messages = this.render(fold.state);
        const revision = state.contextRevision ?? 0;
        const previous = this.previous;
        if (previous !== undefined) {
          if (revision !== previous.revision) {
            this.notes.push({ rule: "cache-reset", message: `the context was rewritten or compacted between requests @${previous.offset} and @${e.offset}; the provider cache restarts there`, offsets: [previous.offset, e.offset] });
          } else {
            this.prefixPairsChecked += 1;
            if (!isStrictPrefix(previous.messages, messages)) {
              const at = firstDifference(previous.messages, messages);
              this.violate("cache-prefix", `request @${previous.offset}'s messages are not a strict prefix of request @${e.offset}'s (they differ at message ${at})`, [previous.offset, e.offset]);
            }
          }
        }
        this.previous = { offset: e.offset, messages, revision };
        break;
      }
      case "agent/llm-request-settled": {
        this.settlements += 1;
        const r = e.payload.requestOffset;
        this.settledBy.set(r, [...(this.settledBy.get(r) ?? []), e.offset]);
        if (before.openRequest?.requestedAtOffset !== r) {
          this.violate("settlement-names-open-request", `settlement @${e.offset} names request @${r}, which was not the open request`, [r, e.offset]);
        } else if (e.payload.result.status !== "succeeded") {
          this.failedOrCancelled.add(r);
        }
        break;
      }
      case "agents/context-added": {
        const p = e.payload;
        if (p.role === "assistant" && p.llmRequestOffset !== undefined) this.repliesBy.set(p.llmRequestOffset, [...(this.repliesBy.get(p.llmRequestOffset) ?? []), e.offset]);
        if (p.role === "user" && p.llmRequestPolicy?.behaviour !== "dont-trigger-request") this.userMessages.push(e.offset);
        break;
      }
      case "capability-host/script-run-requested": {
        const s = this.script(e.payload.executionId);
        if (s.requested === undefined) s.requested = e.offset;
        break;
      }
      case "capability-host/script-run-started":
        this.script(e.payload.executionId).started.push(e.offset);
        break;
      case "capability-host/script-run-settled":
        this.script(e.payload.executionId).settled.push(e.offset);
        break;
      default:
        break;
    }
  }

  /** The findings over every event taken so far. */
  report(): AuditReport {
    const streamPath = this.streamPath ?? "/";
    const state = this.fold?.view ?? initialAgentState(streamPath);
    const violations = [...this.violations];
    const notes = [...this.notes];
    const violate = (rule: AuditRule, message: string, offsets: number[]) => violations.push({ rule, message, offsets });

    // Every idempotency key once.
    for (const [key, offsets] of this.keyOffsets) if (offsets.length > 1) violate("idempotency-key-unique", `idempotency key "${key}" appears ${offsets.length} times`, offsets);
    for (const [r, offsets] of this.settledBy) {
      if (offsets.length > 1) violate("request-settled-once", `request @${r} is settled ${offsets.length} times`, [r, ...offsets]);
    }
    for (const [r, offsets] of this.repliesBy) {
      if (offsets.length > 1) violate("reply-once", `request @${r} has ${offsets.length} assistant replies`, [r, ...offsets]);
      if (this.failedOrCancelled.has(r)) violate("no-reply-for-failed-request", `request @${r} was settled failed or cancelled, yet has an assistant reply`, [r, ...offsets]);
    }
    for (const [id, s] of this.scripts) {
      const involved = [...(s.requested === undefined ? [] : [s.requested]), ...s.started, ...s.settled];
      if (s.requested === undefined) violate("script-lifecycle-order", `script ${id} was started or settled but never requested`, involved);
      if (s.started.length > 1) violate("script-started-once", `script ${id} was started ${s.started.length} times`, involved);
      if (s.settled.length > 1) violate("script-settled-once", `script ${id} was settled ${s.settled.length} times`, involved);
      if (s.requested !== undefined && s.settled.length === 0) notes.push({ rule: "script-running", message: `script ${id} has not settled yet`, offsets: involved });
      const start = s.started[0];
      const settle = s.settled[0];
      if (start !== undefined && settle !== undefined && settle < start) violate("script-lifecycle-order", `script ${id} was settled before it started`, involved);
    }

    // Every user message is eventually covered by a request, unless the agent says why not.
    const options = this.options;
    const lastOpened = this.opened[this.opened.length - 1] ?? 0;
    const uncovered = this.userMessages.filter((u) => u > lastOpened);
    const graceMs = options.graceMs ?? 30_000;
    const open = state.openRequest;
    if (open !== null) {
      const overdueMs = options.nowMs === undefined ? 0 : options.nowMs - Date.parse(open.expiresAt);
      if (overdueMs > graceMs) violate("request-overdue", `request @${open.requestedAtOffset} expired at ${open.expiresAt}, ${Math.round(overdueMs / 1000)} s ago, and was never settled`, [open.requestedAtOffset]);
      else notes.push({ rule: "request-open", message: `request @${open.requestedAtOffset} is still open`, offsets: [open.requestedAtOffset] });
    }
    if (uncovered.length > 0) {
      const why = uncoveredReason(state);
      const trigger = state.pendingLlmRequestTrigger;
      const lateMs = options.nowMs === undefined || trigger === null || why?.rule !== "turn-pending" || open !== null ? 0 : options.nowMs - requestDueAtMs(state, trigger);
      if (why === null) violate("user-message-covered", `${uncovered.length} user message(s) after the last request were never sent to the model, and nothing is pending`, uncovered);
      else if (lateMs > graceMs) violate("user-message-covered", `a turn for ${uncovered.length} user message(s) was due ${Math.round(lateMs / 1000)} s ago and never requested`, uncovered);
      else notes.push({ ...why, offsets: uncovered });
    }

    return {
      streamPath,
      events: this.count,
      firstOffset: this.firstOffset,
      lastOffset: this.lastOffset,
      requests: this.opened.length,
      settlements: this.settlements,
      scripts: this.scripts.size,
      prefixPairsChecked: this.prefixPairsChecked,
      violations,
      notes,
    };
  }
}

function uncoveredReason(state: ReactionState): { rule: AuditNoteKind; message: string } | null {
  if (state.birthCertificate === null) return { rule: "not-born", message: "the stream has no agent/created, so no turn is ever scheduled" };
  if (state.paused !== null) return { rule: "paused", message: `the agent is paused since @${state.paused.atOffset}${state.paused.reason ? ` (${state.paused.reason})` : ""}` };
  const maxAttempts = state.config.llmRequestRetryPolicy.maxAttempts;
  if (state.consecutiveLlmFailures >= maxAttempts) return { rule: "gave-up", message: `the agent gave up after ${state.consecutiveLlmFailures} failed attempts` };
  if (state.openRequest !== null || state.pendingLlmRequestTrigger !== null) return { rule: "turn-pending", message: "a turn is pending (debounce, backoff or an open request)" };
  return null;
}
