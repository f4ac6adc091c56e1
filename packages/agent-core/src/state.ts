// The folded agent state (contract.md "The agent state"). Every service that needs agent
// state uses the same pure fold over these types; nothing here does IO.

import type { AgentConfig, PayloadOf } from "@agentrt/contract";

export type ContextAddedPayload = PayloadOf<"agents/context-added">;

/** A request stamp: the permanent render of an `agent/llm-request-requested`. */
export interface RequestItem {
  readonly kind: "request";
  readonly offset: number;
  /** ISO createdAt of the requested event. */
  readonly requestedAt: string;
}

/** A keyed context item: a section of the standing document or a later superseding one. */
export interface SectionItem {
  readonly kind: "section";
  readonly offset: number;
  readonly key: string;
  /** Offset of the occurrence this one replaces from here on, when it was already sent. */
  readonly supersedes?: number;
  readonly payload: ContextAddedPayload;
}

/** An unkeyed context item: one turn at its offset. */
export interface MessageItem {
  readonly kind: "message";
  readonly offset: number;
  readonly payload: ContextAddedPayload;
}

export type ContextItem = RequestItem | SectionItem | MessageItem;

export type TriggerSource = "external" | "agent-loop";

export interface PendingTrigger {
  readonly offset: number;
  /** createdAt of the triggering event, in epoch milliseconds. */
  readonly atMs: number;
  readonly source: TriggerSource;
}

export interface OpenRequest {
  readonly requestedAtOffset: number;
  /** ISO timestamp. */
  readonly expiresAt: string;
  readonly model: string;
}

export interface ActiveScriptExecution {
  readonly executionId: string;
  /** ISO createdAt of the script-run-requested event. */
  readonly requestedAt: string;
  /** Offset of the script-run-requested event. */
  readonly requestedOffset: number;
}

export interface AgentSummary {
  readonly title?: string;
  readonly description?: string;
  readonly activity?: string;
  readonly waitingFor?: "user_input" | "external_event" | "timer";
  readonly pinned?: boolean;
  readonly waitingForSinceOffset?: number;
}

export interface TokenUsageTotals {
  readonly totalInputTokens: number;
  readonly totalOutputTokens: number;
  readonly totalCachedInputTokens: number;
  readonly totalReasoningOutputTokens: number;
}

export interface AgentState {
  readonly streamPath: string;
  /** Offset of the last event folded (0 before any). */
  readonly lastFoldedOffset: number;
  /** createdAt (epoch ms) of the last event folded, 0 before any. */
  readonly lastFoldedAtMs: number;
  readonly birthCertificate: { readonly createdAtOffset: number } | null;
  readonly config: AgentConfig;
  readonly contextItems: readonly ContextItem[];
  /**
   * Bumped whenever `contextItems` changes other than by appending at the tail (in-place
   * coalesce, rewrite, compaction), so an incremental renderer knows its cache is stale.
   * Optional so that hand-built states stay valid; absent means 0.
   */
  readonly contextRevision?: number;
  readonly lastLlmRequestOffset: number;
  readonly latestExternalTriggerOffset: number;
  readonly pendingLlmRequestTrigger: PendingTrigger | null;
  readonly openRequest: OpenRequest | null;
  readonly consecutiveLlmFailures: number;
  readonly paused: { readonly reason?: string; readonly atOffset: number } | null;
  readonly autonomousTurnCount: number;
  readonly activeScriptExecutions: readonly ActiveScriptExecution[];
  readonly summary: AgentSummary;
  readonly tokenUsage: TokenUsageTotals;
}

/**
 * The state without its context: what the per-event reactions read (the reducer's, the
 * audit's). A fold that goes event by event answers these around each event without publishing
 * the context (`StepwiseFold`), so a long stream costs no copy of it per event.
 */
export type ReactionState = Omit<AgentState, "contextItems">;
