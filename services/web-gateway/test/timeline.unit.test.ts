// The chat view's pure model (ui/src/timeline.ts): which events become which bubbles and cards.
import { describe, expect, it } from "vitest";
import { type LiveReplies, applyLiveEvent, buildTimeline, dropSettledReplies, isEmptyChat } from "../ui/src/timeline.ts";

let offset = 0;
const ev = (type: string, payload: unknown, createdAt = "2026-01-01T00:00:00.000Z", idempotencyKey?: string) => ({
  streamPath: "/a",
  offset: ++offset,
  type,
  payload,
  createdAt,
  ...(idempotencyKey ? { idempotencyKey } : {}),
});

/** Replies streamed as raw text only (no previews). */
const rawLive = (entries: [number, string][]): LiveReplies => new Map(entries.map(([r, text]) => [r, { next: 1, early: new Map(), text }]));
const live = (type: string, payload: unknown) => ({ streamPath: "/a", offset: 2, type, payload, createdAt: "2026-01-01T00:00:00.000Z", ephemeral: true });
const chunkEvent = (sequence: number, text: string) => live("agent/llm-response-chunks", { llmRequestOffset: 2, sequence, chunks: [{ choices: [{ index: 0, delta: { content: text } }] }] });
const replay = (events: ReturnType<typeof live>[]): LiveReplies => events.reduce<LiveReplies>((m, e) => applyLiveEvent(m, e), new Map());

describe("buildTimeline", () => {
  it("given a reply cut at the output limit, when the timeline is built, then its request marker says so", () => {
    offset = 0;
    const events = [
      ev("agents/context-added", { role: "user", content: "write a lot" }),
      ev("agent/llm-request-requested", { model: "m", expiresAt: "2099-01-01T00:00:00.000Z" }),
      ev("agents/context-added", { role: "assistant", content: "It began", llmRequestOffset: 2 }),
      ev("agent/llm-request-settled", { requestOffset: 2, result: { status: "succeeded", text: "It began", rawResponse: { finishReason: "length" } } }),
    ];
    const items = buildTimeline(events, new Map());
    expect(items[1]).toEqual({ kind: "request", offset: 2, model: "m", status: "succeeded", note: "cut short: the model reached its output token limit (finish_reason length)" });
  });

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
    const items = buildTimeline(events, rawLive([[2, "Counting."]]));
    expect(items.map((i) => i.kind)).toEqual(["user", "request", "assistant", "script"]);
    expect(items[1]).toMatchObject({ status: "succeeded" });
    expect(items[2]).toMatchObject({ content: "Counting." });
    expect(items[3]).toMatchObject({ status: "succeeded", result: "3", durationMs: 1234 });
  });

  it("shows live text under its request until the reply is committed", () => {
    offset = 0;
    const events = [ev("agents/context-added", { role: "user", content: "hi" }), ev("agent/llm-request-requested", { model: "m", expiresAt: "2099-01-01T00:00:00.000Z" })];
    expect(buildTimeline(events, rawLive([[2, "Hel"]])).map((i) => i.kind)).toEqual(["user", "request", "streaming"]);
    expect(buildTimeline(events, rawLive([[2, ""]])).map((i) => i.kind)).toEqual(["user", "request"]);
  });
});

describe("live replies", () => {
  const requested = () => {
    offset = 0;
    return [ev("agents/context-added", { role: "user", content: "count PRs" }), ev("agent/llm-request-requested", { model: "m", expiresAt: "2099-01-01T00:00:00.000Z" })];
  };

  it("given chunks out of order, when folded, then the raw text follows their sequence and ignores repeats", () => {
    const replies = replay([chunkEvent(1, "world"), chunkEvent(0, "hello "), chunkEvent(1, "world")]);
    expect(replies.get(2)?.text).toBe("hello world");
    expect(buildTimeline(requested(), replies).at(-1)).toEqual({ kind: "streaming", requestOffset: 2, text: "hello world" });
  });

  it("given chunk events with large parts that are not text (a tool call's arguments), when folded, then only the text is kept, each chunk read once", () => {
    const toolCall = (sequence: number) =>
      live("agent/llm-response-chunks", { llmRequestOffset: 2, sequence, chunks: [{ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: "x".repeat(60_000) } }] } }] }] });
    const events = [...Array.from({ length: 50 }, (_, i) => toolCall(i + 1)), chunkEvent(0, "calling")];
    const replies = replay([...events.slice(0, 10).reverse(), ...events.slice(10)]);
    const reply = replies.get(2)!;
    expect(reply.text).toBe("calling");
    expect(reply.next).toBe(51);
    expect(reply.early.size).toBe(0);
    // What the page holds for the reply is its text, not the 3 MB of arguments
    expect(JSON.stringify([...reply.early]).length + reply.text.length).toBeLessThan(100);
  });

  it("given a page opened mid-reply (its first chunks never came), when later chunks arrive, then they are shown in order", () => {
    const replies = replay([chunkEvent(5, "late "), chunkEvent(7, "!"), chunkEvent(6, "join")]);
    expect(buildTimeline(requested(), replies).at(-1)).toEqual({ kind: "streaming", requestOffset: 2, text: "late join!" });
  });

  it("given a batch of stored events that settles a reply, then its live state goes; other replies and unsettled ones stay", () => {
    const replies = replay([chunkEvent(0, "a"), live("agent/llm-response-chunks", { llmRequestOffset: 7, sequence: 0, chunks: [] })]);
    offset = 10;
    const settled = ev("agent/llm-request-settled", { requestOffset: 2, result: { status: "succeeded", text: "a" } });
    const after = dropSettledReplies(replies, [ev("agents/context-added", { role: "assistant", content: "a", llmRequestOffset: 2 }), settled]);
    expect([...after.keys()]).toEqual([7]);
    expect(dropSettledReplies(after, [ev("agents/context-added", { role: "user", content: "b" })])).toBe(after);
  });

  it("given the reducer's previews, when folded, then prose and script stream apart, not the raw text", () => {
    const replies = replay([
      chunkEvent(0, 'Counting.\n<codemode status="Counting pulls">\nreturn (await itx.repo'),
      live("render/message-delta", { llmRequestOffset: 2, text: "Counting." }),
      live("render/script-delta", { llmRequestOffset: 2, code: "return (await itx.repo", status: "Counting pulls" }),
      live("render/script-delta", { llmRequestOffset: 2, code: ".listPulls()).length" }),
    ]);
    expect(buildTimeline(requested(), replies).at(-1)).toEqual({
      kind: "streaming",
      requestOffset: 2,
      text: "Counting.",
      script: { code: "return (await itx.repo.listPulls()).length", status: "Counting pulls" },
    });
  });

  it("given a reply that starts with its script, when only a script preview came, then the script shows alone", () => {
    const replies = replay([live("render/script-delta", { llmRequestOffset: 2, code: "return 1" })]);
    expect(buildTimeline(requested(), replies).at(-1)).toEqual({ kind: "streaming", requestOffset: 2, text: "", script: { code: "return 1" } });
  });

  it("given the reply committed, when previews linger, then only the durable reply shows", () => {
    const events = [...requested(), ev("agents/context-added", { role: "assistant", content: "Counting.", llmRequestOffset: 2 })];
    const replies = replay([live("render/message-delta", { llmRequestOffset: 2, text: "Counting." })]);
    expect(buildTimeline(events, replies).map((i) => i.kind)).toEqual(["user", "request", "assistant"]);
  });

  it("leaves the replies as they are for other live events", () => {
    const replies = replay([chunkEvent(0, "a")]);
    expect(applyLiveEvent(replies, live("agent/runtime-changed", { llmRequestOffset: 2 }))).toBe(replies);
    expect(applyLiveEvent(replies, live("render/message-delta", {}))).toBe(replies);
  });
});

describe("pauses, resumes and the empty chat", () => {
  it("shows pause and resume as chat events with their reasons", () => {
    offset = 0;
    const events = [
      ev("agent/created", {}),
      ev("agents/context-added", { role: "user", content: "hi" }),
      ev("agent/paused", { reason: "stopped by the user" }),
      ev("agent/resumed", {}),
    ];
    const items = buildTimeline(events, new Map());
    expect(items).toEqual([
      { kind: "user", offset: 2, content: "hi" },
      { kind: "paused", offset: 3, reason: "stopped by the user" },
      { kind: "resumed", offset: 4 },
    ]);
  });

  it("an agent nobody has talked to is empty; a message, a reply or a stream ends that", () => {
    offset = 0;
    const birth = [ev("agent/created", {}), ev("agents/context-added", { role: "system", content: "You are helpful." })];
    expect(isEmptyChat(buildTimeline(birth, new Map()))).toBe(true);
    expect(isEmptyChat(buildTimeline([...birth, ev("agent/paused", {})], new Map()))).toBe(true);
    expect(isEmptyChat(buildTimeline([...birth, ev("agents/context-added", { role: "user", content: "hi" })], new Map()))).toBe(false);
    expect(isEmptyChat(buildTimeline([...birth, ev("agents/web-message-sent", { message: "Hello!" })], new Map()))).toBe(false);
  });

  it("a reply whose block did not run shows in full (the core's reply prose), one that ran shows its prose", () => {
    offset = 0;
    const twoBlocks = "a\n```ts\nasync () => 1\n```\nb\n```ts\nasync () => 2\n```";
    const events = [
      ev("agents/context-added", { role: "assistant", content: twoBlocks, llmRequestOffset: 9 }),
      ev("agents/context-added", { role: "assistant", content: "Hi.\n```ts\nasync () => 1\n```", llmRequestOffset: 10 }),
    ];
    expect(buildTimeline(events, new Map()).map((i) => (i.kind === "assistant" ? i.content : i.kind))).toEqual([twoBlocks, "Hi."]);
  });
});
