// Event inputs and waits every tier's tests share: a born agent, a user's message, and waiting
// (with a deadline, never a sleep) for an event to reach a stream.

import type { AgentEvent, EventInput } from "@agentrt/contract";
import { waitFor } from "./nats/wait.ts";

/** A born agent with one system section, debounce 0 (the model and interpreter optional). */
export function birthEvents(options: { interpretResponses?: boolean; model?: string } = {}): EventInput[] {
  return [
    { type: "agent/created", payload: {} },
    {
      type: "agent/configured",
      payload: {
        config: {
          interpretResponses: options.interpretResponses ?? false,
          llmRequestDebounceMs: 0,
          ...(options.model === undefined ? {} : { llm: { model: options.model } }),
        },
      },
    },
    { type: "agents/context-added", payload: { role: "system", key: "identity", content: "You are a test agent." } },
  ];
}

/** A message from a user of the web UI (optionally keyed, for retries). */
export function userMessage(content: string, idempotencyKey?: string): EventInput {
  return {
    type: "agents/context-added",
    payload: { role: "user", content, actor: { type: "user", origin: "web" } },
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  };
}

/** Anything a stream can be read from (the event store, a gateway client). */
export interface ReadsStreams {
  read(path: string): Promise<readonly AgentEvent[]>;
}

/** Waits until an event of `type` matching `match` is on the stream; fails at the deadline naming it. */
export async function waitForEvent<T extends AgentEvent["type"]>(
  store: ReadsStreams,
  path: string,
  type: T,
  match: (event: Extract<AgentEvent, { type: T }>) => boolean = () => true,
  timeoutMs = 15_000,
): Promise<Extract<AgentEvent, { type: T }>> {
  return waitFor(
    async () => (await store.read(path)).find((e): e is Extract<AgentEvent, { type: T }> => e.type === type && match(e as Extract<AgentEvent, { type: T }>)),
    { timeoutMs, intervalMs: 50, what: `${type} on ${path}` },
  );
}
