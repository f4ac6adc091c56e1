// Compaction (contract: "The LLM request (driver)"): when one turn's usage crosses
// `compactionTriggerFraction` of the context window, the driver asks the model for a summary
// of the history through the request and appends it as a developer compaction item; the
// fold then replaces that history with the summary.

import { type ContextItem, keptByCompaction } from "@agentrt/agent-core";
import { eventInput, type EventInput, type PayloadOf } from "@agentrt/contract";
import { compactContextKey } from "./settlement.ts";

type UsageReport = PayloadOf<"agent/token-usage-reported">;

export interface CompactionCheck {
  readonly due: boolean;
  readonly usedTokens: number;
  readonly thresholdTokens: number;
}

/**
 * Whether the turn's usage calls for a compaction. Reported counts are held to what the turn
 * could have used: a prompt cannot hold more tokens than its bytes (a token is at least one), plus
 * some framing per message, and no answer is longer than eight context windows. Past that a count
 * is an endpoint's junk, not usage: taken as usage, an endpoint reporting 99 M prompt tokens had
 * the history compacted, a second model call, after every turn (red-team). A real count past the
 * window (a model larger than its configured window) still compacts.
 */
export function compactionCheck(report: UsageReport, triggerFraction: number, prompt?: { readonly bytes: number; readonly messages: number }): CompactionCheck {
  const usedTokens = report.inputTokens + report.outputTokens;
  const thresholdTokens = Math.floor(report.maxContextTokens * triggerFraction);
  const inputPlausible = prompt === undefined || report.inputTokens <= prompt.bytes + PROMPT_FRAMING_TOKENS_PER_MESSAGE * prompt.messages + PROMPT_FRAMING_TOKENS;
  const outputPlausible = report.outputTokens <= 8 * report.maxContextTokens;
  return { due: inputPlausible && outputPlausible && usedTokens >= thresholdTokens, usedTokens, thresholdTokens };
}

/**
 * Whether a compaction could make the context meaningfully smaller: the fold keeps each key's
 * newest section and every unkeyed system message through it (`keptByCompaction`), so a context
 * that is mostly those (90 % of its text or more) stays over the threshold after its summary, and a compaction, one
 * more model call over the whole context, came after every turn (red-team: 40 000 keyed
 * sections, 368 k tokens a turn). Pure; linear in the items.
 */
export function compactionCanShrink(items: readonly ContextItem[]): boolean {
  const textOf = (list: readonly ContextItem[]) => list.reduce((sum, item) => sum + (item.kind === "request" ? 0 : item.payload.content.length), 0);
  const { sections, systemMessages } = keptByCompaction(items);
  const total = textOf(items);
  return total > 0 && textOf(sections) + textOf(systemMessages) < COMPACTION_KEEPS_AT_MOST * total;
}

/** Past this share of the context's text kept by a compaction, none is asked for. */
const COMPACTION_KEEPS_AT_MOST = 0.9;

/** Tokens a provider may count per message beyond its text (role, separators), and per prompt (its own preamble). */
const PROMPT_FRAMING_TOKENS_PER_MESSAGE = 16;
const PROMPT_FRAMING_TOKENS = 4_096;

/** What the compaction check needs of a rendered prompt: its text's bytes and its messages. */
export function promptSize(messages: readonly { readonly content: string }[]): { bytes: number; messages: number } {
  return { bytes: messages.reduce((sum, m) => sum + Buffer.byteLength(m.content), 0), messages: messages.length };
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
