// Builds committed events for specs: dense offsets, a clock that only moves when told, and
// payloads validated by the contract's schemas so a spec can never fold something the store
// would have rejected.

import { type AgentEvent, type AgentEventOf, type EventInput, type EventType, type PayloadOf, parseStoredEvent } from "@agentrt/contract";

export const T0 = Date.parse("2026-08-24T16:41:00.000Z");
export const PATH = "/agents/web/spec";

export class TestStream {
  private offset = 0;
  private nowMs = T0;

  constructor(readonly streamPath = PATH) {}

  /** Moves the clock forward by `ms`. */
  wait(ms: number): this {
    this.nowMs += ms;
    return this;
  }

  get now(): number {
    return this.nowMs;
  }

  get nextOffset(): number {
    return this.offset + 1;
  }

  event<T extends EventType>(type: T, payload: PayloadOf<T>, idempotencyKey?: string): AgentEventOf<T> {
    this.offset += 1;
    const raw = {
      streamPath: this.streamPath,
      offset: this.offset,
      createdAt: new Date(this.nowMs).toISOString(),
      type,
      payload,
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    };
    const parsed = parseStoredEvent(raw);
    if (!parsed.ok) throw new Error(`spec built an invalid event: ${parsed.reason}`);
    return parsed.event as AgentEventOf<T>;
  }

  /** Commits what a reducer or interpreter asked to append. */
  commit(input: EventInput): AgentEvent {
    return this.event(input.type, input.payload as never, input.idempotencyKey) as AgentEvent;
  }

  created(): AgentEvent {
    return this.event("agent/created", {});
  }

  /** The certificate create() writes for an agent of a project. */
  createdInProject(project = { name: "Demo", slug: "demo" }): AgentEvent {
    return this.event("agent/created", { project });
  }

  configured(config: PayloadOf<"agent/configured">["config"]): AgentEvent {
    return this.event("agent/configured", { config });
  }

  user(content: string, extra: Partial<PayloadOf<"agents/context-added">> = {}): AgentEvent {
    return this.event("agents/context-added", { role: "user", content, actor: { type: "user", origin: "web" }, ...extra });
  }

  context(payload: PayloadOf<"agents/context-added">): AgentEventOf<"agents/context-added"> {
    return this.event("agents/context-added", payload);
  }

  section(key: string, content: string, role: "system" | "developer" = "system"): AgentEvent {
    return this.event("agents/context-added", { role, key, content });
  }

  requested(expiresAt?: string): AgentEventOf<"agent/llm-request-requested"> {
    return this.event("agent/llm-request-requested", {
      model: "openai/gpt-5.6-terra",
      contractVersion: "7.0.0",
      expiresAt: expiresAt ?? new Date(this.nowMs + 600_000).toISOString(),
    });
  }

  assistant(content: string, llmRequestOffset: number): AgentEvent {
    return this.event("agents/context-added", { role: "assistant", content, llmRequestOffset });
  }

  succeeded(requestOffset: number, text = "ok"): AgentEvent {
    return this.event("agent/llm-request-settled", { requestOffset, result: { status: "succeeded", text } });
  }

  failed(requestOffset: number, errorMessage = "boom"): AgentEvent {
    return this.event("agent/llm-request-settled", { requestOffset, result: { status: "failed", errorMessage } });
  }

  scriptResult(executionId: string, content = "Your script returned (in 5ms):\n```json\n1\n```"): AgentEvent {
    return this.event("agents/context-added", {
      role: "developer",
      content,
      actor: { type: "script", executionId },
      llmRequestPolicy: { behaviour: "after-current-request" },
    });
  }
}
