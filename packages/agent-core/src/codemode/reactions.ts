// The platform's built-in codemode reactions, called by the fold shell with the state BEFORE
// each event. Returns batches to append (each batch atomic), every event idempotency-keyed so
// two incarnations reacting to the same event collapse to one set.
//
// Spill choice: this pure function cannot write a workspace file, so for a result too long
// for the history it returns the TRUTHFUL inline form (`eventIfWriteFailed`: truncated, with
// the `… truncated (…)` note) rather than claiming a file that may not exist. A shell that can
// write calls `planScriptResultRender` first, writes the file, and appends `eventIfWritten`
// under the same idempotency key (`scriptResultRenderKey`) before appending these batches —
// whichever lands first wins and the other commits nothing.

import type { AgentEvent, EventInput } from "@agentrt/contract";
import type { ReactionState } from "../state.ts";
import { elapsedMs } from "../display/duration.ts";
import { parseFencedReply } from "./fenced.ts";
import { isOwnOpenReply, replyEvents } from "./interpret.ts";
import { planScriptResultRender, type ScriptResultRenderPlan } from "./render-result.ts";

/** Plans the rendering of a settlement the agent itself requested; null for anyone else's. */
export function planSettlementRender(
  stateBefore: ReactionState,
  event: Extract<AgentEvent, { type: "capability-host/script-run-settled" }>,
): ScriptResultRenderPlan | null {
  const active = stateBefore.activeScriptExecutions.find((e) => e.executionId === event.payload.executionId);
  if (active === undefined) return null;
  return planScriptResultRender({
    executionId: event.payload.executionId,
    settlement: event.payload.settlement,
    durationMs: elapsedMs(active.requestedAt, event.createdAt),
    settledOffset: event.offset,
    historyLimit: stateBefore.config.scriptResultHistoryLimit,
  });
}

export function codemodeReactions(stateBefore: ReactionState, event: AgentEvent): EventInput[][] {
  switch (event.type) {
    case "agents/context-added": {
      if (!stateBefore.config.interpretResponses || !isOwnOpenReply(stateBefore, event)) return [];
      const batch = replyEvents(stateBefore, event, parseFencedReply(event.payload.content));
      return batch.length === 0 ? [] : [batch];
    }
    case "capability-host/script-run-settled": {
      const plan = planSettlementRender(stateBefore, event);
      if (plan === null || plan.kind === "nothing") return [];
      return [[plan.kind === "inline" ? plan.event : plan.eventIfWriteFailed]];
    }
    default:
      return [];
  }
}
