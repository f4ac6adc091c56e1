// Shared pieces of the system tests: talking to agents through the store, and auditing their
// streams for exactly-once settlement and duplicate-free history.

import type { AgentEvent } from "@agentrt/contract";
import type { EventStore } from "@agentrt/streams";
import { type AuditRule, auditAgentStream } from "@agentrt/agent-core";
import { userMessage, waitFor } from "@agentrt/testing";

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
  const result = await store.append(path, [userMessage(content)]);
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
  /** Every other violation the core's stream audit found (must be 0). */
  readonly violations: number;
}

/**
 * The core's stream audit (what `agents audit` runs), summed up for the chaos tests: every
 * request settles exactly once, no request has two replies, and no other invariant breaks.
 */
export function auditStream(events: readonly AgentEvent[]): StreamAudit {
  const report = auditAgentStream(events);
  const count = (...rules: AuditRule[]) => report.violations.filter((v) => rules.includes(v.rule)).reduce((n, v) => n + v.offsets.length - 2, 0);
  const duplicated = count("request-settled-once", "reply-once");
  const others = report.violations.filter((v) => v.rule !== "request-settled-once" && v.rule !== "reply-once" && v.rule !== "settlement-names-open-request");
  if (others.length > 0) process.stdout.write(`AUDIT ${report.streamPath}: ${JSON.stringify(others)}\n`);
  return {
    requests: report.requests,
    settlements: report.settlements,
    lost: report.notes.some((n) => n.rule === "request-open") || report.violations.some((v) => v.rule === "request-overdue") ? 1 : 0,
    duplicated,
    violations: others.length,
  };
}

export function sumAudits(audits: readonly StreamAudit[]): StreamAudit {
  return audits.reduce(
    (a, b) => ({
      requests: a.requests + b.requests,
      settlements: a.settlements + b.settlements,
      lost: a.lost + b.lost,
      duplicated: a.duplicated + b.duplicated,
      violations: a.violations + b.violations,
    }),
    { requests: 0, settlements: 0, lost: 0, duplicated: 0, violations: 0 },
  );
}
