// Shared pieces of the system tests: talking to agents through the store, and auditing their
// streams for exactly-once settlement and duplicate-free history.

import type { AgentEvent } from "@agentrt/contract";
import type { EventStore } from "@agentrt/streams";
import { foldAgentEvent, initialAgentState } from "@agentrt/agent-core";
import { waitFor } from "@agentrt/testing";

export function lastUserContent(body: unknown): string {
  const messages = (body as { messages?: Array<{ role: string; content: unknown }> }).messages ?? [];
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const m = messages[i]!;
    if (m.role === "user" && typeof m.content === "string") return m.content;
  }
  return "";
}

export async function createBareAgent(store: EventStore, path: string, debounceMs = 50): Promise<void> {
  await store.append(path, [
    { type: "agent/created", payload: {} },
    { type: "agent/configured", payload: { config: { llmRequestDebounceMs: debounceMs } } },
  ]);
}

export async function say(store: EventStore, path: string, content: string): Promise<AgentEvent> {
  const result = await store.append(path, [
    { type: "agents/context-added", payload: { role: "user", content, actor: { type: "user", origin: "web" } } },
  ]);
  return result.events[0]!;
}

export async function waitForAssistant(store: EventStore, path: string, contains: string, timeoutMs: number): Promise<AgentEvent> {
  let found: AgentEvent | undefined;
  await waitFor(
    async () => {
      found = (await store.read(path)).find(
        (e) => e.type === "agents/context-added" && e.payload.role === "assistant" && e.payload.content.includes(contains),
      );
      return found !== undefined;
    },
    { timeoutMs, intervalMs: 100 },
  );
  return found!;
}

export interface StreamAudit {
  readonly requests: number;
  readonly settlements: number;
  /** Requests with no settlement. */
  readonly lost: number;
  /** Settlements beyond the first for a request, plus assistant items beyond the first for one. */
  readonly duplicated: number;
  readonly assistantItems: number;
}

/** Every request settles exactly once, and no request has two assistant items. */
export function auditStream(events: readonly AgentEvent[]): StreamAudit {
  // Only requests the fold accepted (it opened them) are owed a settlement; a request appended
  // when none was due is ignored by every reader, as the contract says.
  const requests: number[] = [];
  let state = initialAgentState(events[0]?.streamPath ?? "/none");
  for (const e of events) {
    state = foldAgentEvent(state, e);
    if (e.type === "agent/llm-request-requested" && state.openRequest?.requestedAtOffset === e.offset) requests.push(e.offset);
  }
  const settledBy = new Map<number, number>();
  const assistantBy = new Map<number, number>();
  for (const e of events) {
    if (e.type === "agent/llm-request-settled") settledBy.set(e.payload.requestOffset, (settledBy.get(e.payload.requestOffset) ?? 0) + 1);
    if (e.type === "agents/context-added" && e.payload.role === "assistant" && e.payload.llmRequestOffset !== undefined) {
      assistantBy.set(e.payload.llmRequestOffset, (assistantBy.get(e.payload.llmRequestOffset) ?? 0) + 1);
    }
  }
  const lost = requests.filter((r) => !settledBy.has(r)).length;
  const duplicated =
    [...settledBy.values()].reduce((n, c) => n + Math.max(0, c - 1), 0) + [...assistantBy.values()].reduce((n, c) => n + Math.max(0, c - 1), 0);
  return {
    requests: requests.length,
    settlements: [...settledBy.values()].reduce((a, b) => a + b, 0),
    lost,
    duplicated,
    assistantItems: [...assistantBy.values()].reduce((a, b) => a + b, 0),
  };
}

export function sumAudits(audits: readonly StreamAudit[]): StreamAudit {
  return audits.reduce(
    (a, b) => ({
      requests: a.requests + b.requests,
      settlements: a.settlements + b.settlements,
      lost: a.lost + b.lost,
      duplicated: a.duplicated + b.duplicated,
      assistantItems: a.assistantItems + b.assistantItems,
    }),
    { requests: 0, settlements: 0, lost: 0, duplicated: 0, assistantItems: 0 },
  );
}

/** A small seeded PRNG so chaos schedules are reproducible from the printed seed. */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
