// The chat view's pure model (ui/src/timeline.ts): which events become which bubbles and cards.
import { describe, expect, it } from "vitest";
import { buildTimeline, chunkText, formatDuration, proseOf } from "../ui/src/timeline.ts";

let offset = 0;
const ev = (type: string, payload: unknown, createdAt = "2026-01-01T00:00:00.000Z", idempotencyKey?: string) => ({
  streamPath: "/a",
  offset: ++offset,
  type,
  payload,
  createdAt,
  ...(idempotencyKey ? { idempotencyKey } : {}),
});

describe("buildTimeline", () => {
  it("turns a codemode turn into user, request, assistant prose and a settled script with its duration", () => {
    offset = 0;
    const events = [
      ev("agents/context-added", { role: "user", content: "count PRs" }),
      ev("agent/llm-request-requested", { model: "m", expiresAt: "2099-01-01T00:00:00.000Z" }),
      ev("agents/context-added", { role: "assistant", content: 'Counting.\n<codemode status="x">\nreturn 3\n</codemode>', llmRequestOffset: 2 }),
      ev("agent/llm-request-settled", { requestOffset: 2, result: { status: "succeeded", text: "" } }),
      ev("agents/web-message-sent", { message: "Counting.", llmRequestOffset: 2 }),
      ev("capability-host/script-run-requested", { code: "return 3", executionId: "agent-output:3", expiresAt: "2099-01-01T00:00:00.000Z" }, "2026-01-01T00:00:01.000Z"),
      ev("capability-host/script-run-started", { executionId: "agent-output:3" }),
      ev("capability-host/script-run-settled", { executionId: "agent-output:3", settlement: { status: "succeeded", result: 3 } }, "2026-01-01T00:00:02.234Z"),
      ev("agents/context-added", { role: "assistant", content: "The assistant sent this visible web-chat message: hi" }, undefined, "agent/render-web-response@9"),
    ];
    const items = buildTimeline(events, new Map([[2, "Counting."]]));
    expect(items.map((i) => i.kind)).toEqual(["user", "request", "assistant", "script"]);
    expect(items[1]).toMatchObject({ status: "succeeded" });
    expect(items[2]).toMatchObject({ content: "Counting." });
    expect(items[3]).toMatchObject({ status: "succeeded", result: "3", durationMs: 1234 });
  });

  it("shows live text under its request until the reply is committed", () => {
    offset = 0;
    const events = [ev("agents/context-added", { role: "user", content: "hi" }), ev("agent/llm-request-requested", { model: "m", expiresAt: "2099-01-01T00:00:00.000Z" })];
    expect(buildTimeline(events, new Map([[2, "Hel"]])).map((i) => i.kind)).toEqual(["user", "request", "streaming"]);
    expect(buildTimeline(events, new Map([[2, ""]])).map((i) => i.kind)).toEqual(["user", "request"]);
  });
});

describe("helpers", () => {
  it("reads text from Chat Completions and Responses chunks", () => {
    expect(chunkText([{ choices: [{ delta: { content: "a" } }] }, { type: "response.output_text.delta", delta: "b" }, { choices: [{ delta: {} }] }])).toBe("ab");
  });
  it("strips the script from the prose", () => {
    expect(proseOf("Hi.\n```ts\nasync () => 1\n```")).toBe("Hi.");
    expect(proseOf('<codemode status="Idle">return</codemode>')).toBe("");
  });
  it("formats durations like the contract", () => {
    expect([formatDuration(999), formatDuration(1234), formatDuration(2000), formatDuration(180_000), formatDuration(125_000)]).toEqual(["999ms", "1.2s", "2s", "3m", "2m 5s"]);
  });
});
