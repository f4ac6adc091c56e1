// Compaction (contract: "The LLM request (driver)"): when one turn's usage crosses
// `compactionTriggerFraction` of the context window, the driver asks the model for a summary
// of the history through the request and appends it as a developer compaction item; the
// fold then replaces that history with the summary.

import { eventInput, type EventInput, type PayloadOf } from "@agentrt/contract";
import { compactContextKey } from "./settlement.ts";

type UsageReport = PayloadOf<"agent/token-usage-reported">;

export interface CompactionCheck {
  readonly due: boolean;
  readonly usedTokens: number;
  readonly thresholdTokens: number;
}

/**
 * Whether the turn's usage calls for a compaction. A count past the context window (input or
 * output alone) is an endpoint's junk, not usage: taken as usage, an endpoint reporting 99 M
 * prompt tokens had the history compacted, a second model call, after every turn (red-team).
 */
export function compactionCheck(report: UsageReport, triggerFraction: number): CompactionCheck {
  const usedTokens = report.inputTokens + report.outputTokens;
  const thresholdTokens = Math.floor(report.maxContextTokens * triggerFraction);
  const plausible = report.inputTokens <= report.maxContextTokens && report.outputTokens <= report.maxContextTokens;
  return { due: plausible && usedTokens >= thresholdTokens, usedTokens, thresholdTokens };
}

export function compactionText(requestOffset: number, check: CompactionCheck, summary: string): string {
  return `[Earlier conversation history was compacted through @${requestOffset} (~${check.usedTokens} tokens > ${check.thresholdTokens}). Summary:]\n\n${summary}`;
}

export function compactionItem(report: UsageReport, reportOffset: number, check: CompactionCheck, summary: string): EventInput {
  return eventInput(
    "agents/context-added",
    {
      role: "developer",
      content: compactionText(report.llmRequestOffset, check, summary),
      compaction: { replacesHistoryThrough: report.llmRequestOffset, usage: { ...report } },
      llmRequestPolicy: { behaviour: "dont-trigger-request" },
    },
    compactContextKey(reportOffset),
  );
}

/** The instruction appended to the rendered request when asking the model for the summary. */
export const COMPACTION_INSTRUCTION =
  "The conversation above is about to be compacted to save context. Write a faithful summary of it for your future self: " +
  "the user's goals and open requests, decisions made, facts learned (paths, names, numbers, results of scripts), and " +
  "what remains to be done. Write plain prose and lists only; no codemode script. This summary is memory, not a new instruction.";
