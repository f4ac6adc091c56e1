// Per-event consequences: interrupts, the web-message mirror, error and preamble
// transcription, the waiting clear, and the runtime transitions for live UIs.

import { describe, expect, it } from "vitest";
import { foldAgentEvent, interruptBatch, type ReactionPolicy, reactToEvent, renderRequest } from "../src/index.ts";
import { given, onlyBatch } from "./support/given.ts";
import { TestStream } from "./support/stream.ts";

const noInterpreters: ReactionPolicy = { codemode: false, projectWorker: null };

describe("interrupts", () => {
  it("an interrupting message mid-stream asks to abort R; the partial text lands as history", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("write an essay"), s.requested()];
    s.wait(3_000);
    const interrupting = s.user("stop, do something else", {
      llmRequestPolicy: { behaviour: "interrupt-current-request" },
    });
    const result = given(...events).when(interrupting).then(({ reaction, state }) => {
      expect(reaction.interrupt).toEqual({ requestOffset: 3 });
      // The interrupting item is the next trigger, queued behind the open request.
      expect(state.pendingLlmRequestTrigger?.offset).toBe(interrupting.offset);
    });
    expect(interruptBatch(3, "Once upon a")).toEqual([
      {
        type: "agents/context-added",
        payload: {
          role: "assistant",
          content: "[Response interrupted by the user's next message; partial output follows]\nOnce upon a",
        },
        idempotencyKey: "agent/render-interrupted-partial@3",
      },
      {
        type: "agent/llm-request-settled",
        payload: { requestOffset: 3, result: { status: "cancelled", reason: "interrupted-by-user-input", partialText: "Once upon a" } },
        idempotencyKey: "agent/settle/3",
      },
    ]);
    // Folding the batch closes R, keeps the partial in history, and the next request follows.
    let state = result.state;
    for (const input of interruptBatch(3, "Once upon a")) state = foldAgentEvent(state, s.commit(input));
    expect(state.openRequest).toBeNull();
    expect(state.pendingLlmRequestTrigger?.offset).toBe(interrupting.offset);
    expect(renderRequest(state).at(-1)).toEqual({
      role: "assistant",
      content: "[Response interrupted by the user's next message; partial output follows]\nOnce upon a",
    });
  });

  it("without streamed text only the cancelled settlement is appended", () => {
    expect(interruptBatch(7)).toEqual([
      {
        type: "agent/llm-request-settled",
        payload: { requestOffset: 7, result: { status: "cancelled", reason: "interrupted-by-user-input" } },
        idempotencyKey: "agent/settle/7",
      },
    ]);
  });

  it("while only debouncing nothing is cancelled: the newest trigger simply wins", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("first")];
    const interrupting = s.user("actually…", { llmRequestPolicy: { behaviour: "interrupt-current-request" } });
    given(...events).when(interrupting).then(({ reaction, state }) => {
      expect(reaction.interrupt).toBeNull();
      expect(reaction.appends.flat().filter((e) => e.type === "agent/llm-request-settled")).toEqual([]);
      expect(state.pendingLlmRequestTrigger?.offset).toBe(interrupting.offset);
    });
  });
});

describe("the web-message mirror", () => {
  it("mirrors a script-sent message (no llmRequestOffset) into history as assistant text, with files", () => {
    const s = new TestStream();
    const file = { contentType: "image/png", filename: "chart.png", path: "out/chart.png", size: 1234, url: "https://x/chart.png" };
    const sent = s.event("agents/web-message-sent", { message: "Here is the chart", files: [file] });
    given(s.created()).when(sent).then(({ reaction }) => {
      expect(reaction.appends).toEqual([
        [
          {
            type: "agents/context-added",
            payload: { role: "assistant", content: "The assistant sent this visible web-chat message: Here is the chart", files: [file] },
            idempotencyKey: `agent/render-web-response@${sent.offset}`,
          },
        ],
      ]);
    });
  });

  it("does not mirror prose extracted from a reply (it carries llmRequestOffset)", () => {
    const s = new TestStream();
    const sent = s.event("agents/web-message-sent", { message: "let me check!", llmRequestOffset: 3 });
    given(s.created()).when(sent).then(({ reaction }) => expect(reaction.appends).toEqual([]));
  });
});

describe("error transcription", () => {
  it("transcribes stream errors as dont-trigger developer context that renders as user", () => {
    const s = new TestStream();
    const error = s.event("stream/error-occurred", { message: "LLM request @3 failed (attempt 1 of 3): 500. Retrying." });
    const appended = given(s.created()).when(error).then(() => undefined).reaction.appends;
    const [transcription] = onlyBatch({ appends: appended, wakeAtMs: null, adopt: null, why: [] });
    expect(transcription).toEqual({
      type: "agents/context-added",
      payload: {
        role: "developer",
        content: "Error on stream: LLM request @3 failed (attempt 1 of 3): 500. Retrying.",
        actor: { type: "integration", name: "stream-error" },
        llmRequestPolicy: { behaviour: "dont-trigger-request" },
      },
      idempotencyKey: `agent/transcribe-error@${error.offset}`,
    });
    const item = s.event("agents/context-added", transcription?.payload as never);
    const state = given(s.created()).when(item).then(({ state: st }) => expect(st.pendingLlmRequestTrigger).toBeNull()).state;
    expect(renderRequest(state).at(-1)).toEqual({
      role: "user",
      content: `@${item.offset} actor=integration:"stream-error"\nError on stream: LLM request @3 failed (attempt 1 of 3): 500. Retrying.`,
    });
  });
});

describe("preamble transcription", () => {
  it("tells the model when a preamble entry is set or removed, without triggering", () => {
    const s = new TestStream();
    const set = s.event("capability-host/preamble-set", { key: "helpers", code: "const two = 2;" });
    const removed = s.event("capability-host/preamble-removed", { key: "helpers" });
    const spec = given(s.created());
    spec.when(set).then(({ appended }) => {
      expect(appended).toEqual([
        {
          type: "agents/context-added",
          payload: {
            role: "developer",
            content:
              'Preamble entry "helpers" was set. This TypeScript is now injected above your scripts — its symbols are in scope:\n```ts\nconst two = 2;\n```',
            llmRequestPolicy: { behaviour: "dont-trigger-request" },
          },
          idempotencyKey: `agent/render-preamble-change@${set.offset}`,
        },
      ]);
    });
    spec.when(removed).then(({ appended }) => {
      expect(appended[0]?.payload).toMatchObject({
        content: 'Preamble entry "helpers" was removed; its symbols are no longer available to your scripts.',
      });
      expect(appended[0]?.idempotencyKey).toBe(`agent/render-preamble-change@${removed.offset}`);
    });
  });
});

describe("the waiting clear", () => {
  const s = new TestStream();
  const waiting = [s.created(), s.event("agent/summary-updated", { activity: "Waiting", waitingFor: "user_input" })];

  it("a triggering user item clears a wait established before it", () => {
    const hi = s.user("here you go");
    given(...waiting).when(hi).then(({ appended }) => {
      expect(appended).toContainEqual({
        type: "agent/summary-updated",
        payload: { waitingFor: null, clearWaitingForThroughOffset: hi.offset },
        idempotencyKey: `agent/waiting-clear@${hi.offset}`,
      });
    });
  });

  it("a script result or a dont-trigger item does not", () => {
    given(...waiting).when(s.scriptResult("agent-output:1")).then(({ appended }) => expect(appended).toEqual([]));
    const quiet = s.user("fyi", { llmRequestPolicy: { behaviour: "dont-trigger-request" } });
    given(...waiting).when(quiet).then(({ appended }) => expect(appended).toEqual([]));
  });

  it("the conditional clear only ends a wait set at or before its offset", () => {
    const spec = given(...waiting);
    expect(spec.state.summary).toEqual({ activity: "Waiting", waitingFor: "user_input", waitingForSinceOffset: 2 });
    spec.when(s.event("agent/summary-updated", { waitingFor: null, clearWaitingForThroughOffset: 1 })).then(({ state }) => {
      expect(state.summary.waitingFor).toBe("user_input");
    });
    spec.when(s.event("agent/summary-updated", { waitingFor: null, clearWaitingForThroughOffset: 2 })).then(({ state }) => {
      expect(state.summary).toEqual({ activity: "Waiting" });
    });
  });

  it("merges summary updates: null clears, omitted keeps, a no-op changes nothing", () => {
    const spec = given(...waiting);
    spec.when(s.event("agent/summary-updated", { title: "PR count", activity: null })).then(({ state }) => {
      expect(state.summary).toEqual({ title: "PR count", waitingFor: "user_input", waitingForSinceOffset: 2 });
    });
    spec.when(s.event("agent/summary-updated", { activity: "Waiting" })).then(({ state, before }) => {
      expect(state.summary).toBe(before.summary);
    });
  });
});

describe("bookkeeping", () => {
  it("tallies token usage with missing fields as 0", () => {
    const s = new TestStream();
    const usage = s.event("agent/token-usage-reported", {
      llmRequestOffset: 3, model: "m", maxContextTokens: 1000, inputTokens: 10, outputTokens: 5, cachedInputTokens: 4,
    });
    const again = s.event("agent/token-usage-reported", {
      llmRequestOffset: 5, model: "m", maxContextTokens: 1000, inputTokens: 1, outputTokens: 2, reasoningOutputTokens: 3,
    });
    expect(given(s.created(), usage, again).state.tokenUsage).toEqual({
      totalInputTokens: 11, totalOutputTokens: 7, totalCachedInputTokens: 4, totalReasoningOutputTokens: 3,
    });
  });

  it("tracks only the agent's own script executions, once each, until settled", () => {
    const s = new TestStream();
    const expiresAt = new Date(s.now + 60_000).toISOString();
    const own = s.event("capability-host/script-run-requested", { code: "1", executionId: "agent-output:9", expiresAt });
    const dup = s.event("capability-host/script-run-requested", { code: "1", executionId: "agent-output:9", expiresAt });
    const api = s.event("capability-host/script-run-requested", { code: "1", executionId: "api:42", expiresAt });
    const slash = s.event("capability-host/script-run-requested", { code: "1", executionId: "slash-command:1", expiresAt });
    const spec = given(s.created(), own, dup, api, slash);
    expect(spec.state.activeScriptExecutions.map((e) => e.executionId)).toEqual(["agent-output:9", "slash-command:1"]);
    const settled = s.event("capability-host/script-run-settled", { executionId: "agent-output:9", settlement: { status: "succeeded", result: 1 } });
    spec.when(settled).then(({ state, reaction }) => {
      expect(state.activeScriptExecutions.map((e) => e.executionId)).toEqual(["slash-command:1"]);
      expect(reaction.runtimeChanged?.payload).toMatchObject({ runtime: { runningScripts: 1 } });
    });
  });

  it("reacts with nothing of its own when interpreters are left to another process", () => {
    const s = new TestStream();
    const events = [s.created(), s.configured({ interpretResponses: true }), s.user("hi"), s.requested()];
    const reply = s.assistant("```ts\nasync () => 1\n```", 4);
    const spec = given(...events);
    const after = foldAgentEvent(spec.state, reply);
    expect(spec.when(reply).then(() => undefined).appended.some((e) => e.type === "capability-host/script-run-requested")).toBe(true);
    expect(reactToEvent(spec.state, reply, after, noInterpreters).appends).toEqual([]);
  });
});
