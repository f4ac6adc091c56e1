// Where a slow turn's time went, read from its stream alone: the waits between consecutive
// stored events inside the turn's window, each named by the step it waited for ("script-run
// requested → started"). Summed over every slow turn of a run, the biggest lines say which hand-off
// to make faster; the long soak's "answered within 30 s" goal is decided by them.

import type { AgentEvent } from "@agentrt/contract";

export interface TurnWindow {
  readonly startedAt: number;
  /** Undefined for a turn that never completed (stuck). */
  readonly completedAt?: number;
}

export interface WaitLine {
  /** The step waited for: "<previous event> → <next event>". */
  readonly step: string;
  /** How many waits of at least `minWaitMs` took this step. */
  readonly count: number;
  readonly totalMs: number;
  readonly maxMs: number;
}

/** A short name of an event for a step: its type without the owner, with what tells cases apart. */
export function eventLabel(event: AgentEvent): string {
  const kind = event.type.slice(event.type.indexOf("/") + 1);
  if (event.type === "agents/context-added") return `${event.payload.role} message`;
  if (event.type === "agent/llm-request-settled") return `${kind} ${event.payload.result.status}`;
  if (event.type === "capability-host/script-run-settled") return `${kind} ${event.payload.settlement.status}`;
  return kind;
}

/**
 * The waits of one turn: from the turn's start to its first stored event, between consecutive
 * events, and from the last one to the turn's end (`endAt`: its completion, or when it was given
 * up). Only waits of at least `minWaitMs` count.
 */
export function turnWaits(events: readonly AgentEvent[], turn: TurnWindow, endAt: number, minWaitMs: number): { step: string; ms: number }[] {
  const inside = events.filter((e) => {
    const at = Date.parse(e.createdAt);
    return at >= turn.startedAt && at <= endAt;
  });
  const waits: { step: string; ms: number }[] = [];
  let previous = "turn start";
  let previousAt = turn.startedAt;
  for (const event of inside) {
    const at = Date.parse(event.createdAt);
    const label = eventLabel(event);
    if (at - previousAt >= minWaitMs) waits.push({ step: `${previous} → ${label}`, ms: at - previousAt });
    previous = label;
    previousAt = at;
  }
  const tail = turn.completedAt === undefined ? "(never answered)" : "answer seen";
  if (endAt - previousAt >= minWaitMs) waits.push({ step: `${previous} → ${tail}`, ms: endAt - previousAt });
  return waits;
}

/** The waits of every slow turn, summed by step, longest total first. */
export function slowTurnAnatomy(
  turns: readonly { readonly events: readonly AgentEvent[]; readonly turn: TurnWindow; readonly endAt: number }[],
  minWaitMs = 1_000,
): WaitLine[] {
  const lines = new Map<string, { count: number; totalMs: number; maxMs: number }>();
  for (const { events, turn, endAt } of turns) {
    for (const wait of turnWaits(events, turn, endAt, minWaitMs)) {
      const line = lines.get(wait.step) ?? { count: 0, totalMs: 0, maxMs: 0 };
      line.count += 1;
      line.totalMs += wait.ms;
      line.maxMs = Math.max(line.maxMs, wait.ms);
      lines.set(wait.step, line);
    }
  }
  return [...lines].map(([step, l]) => ({ step, ...l })).sort((a, b) => b.totalMs - a.totalMs);
}
