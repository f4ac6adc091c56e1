// Regression (chaos soak, issue 16; the driver asks this before it drives a work item): a work item whose stream read ended before its request
// (a cache or a follower lagging after a NATS failover) was acked as "not an open request",
// and the request was never driven until it expired ten minutes later. A short read now says
// so, and the driver tries the item again instead of acking it.

import type { AgentEvent } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { requestStatus } from "../src/index.ts";

const at = (offset: number, type: string, payload: unknown): AgentEvent =>
  ({ streamPath: "/agents/a", offset, createdAt: new Date(1_000 * offset).toISOString(), type, payload }) as AgentEvent;

const stream: AgentEvent[] = [
  at(1, "agent/created", {}),
  at(2, "agents/context-added", { role: "user", content: "hi", actor: { type: "user", origin: "web" } }),
  at(3, "agent/llm-request-requested", { model: "openai/gpt-5.6-terra", expiresAt: new Date(600_000).toISOString() }),
];

/** Before the request expires (600 s). */
const options = { nowMs: 1_000, streamPath: "/agents/a" };

describe("requestStatus", () => {
  it("is open when the read reaches the request", () => {
    expect(requestStatus(stream, 3, options).kind).toBe("open");
  });

  it("is not-visible, not not-open, when the read ends before the request", () => {
    expect(requestStatus(stream.slice(0, 2), 3, options)).toEqual({ kind: "not-visible", lastOffset: 2 });
    expect(requestStatus([], 3, options)).toEqual({ kind: "not-visible", lastOffset: 0 });
  });

  it("is not-open when the stream holds something else at the request's offset", () => {
    expect(requestStatus(stream, 2, options).kind).toBe("not-open");
  });
});
