// The turn lifecycle: triggers, debounce, the birth window, requests, settlement and the
// queue behind an open request (contract.md "What triggers a turn" and "head of the stream").

import type { AgentEvent } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { foldAgentEvent } from "../src/index.ts";
import { given, onlyBatch } from "./support/given.ts";
import { TestStream } from "./support/stream.ts";

describe("a full turn", () => {
  it("user message → debounced request → assistant reply → settled, with one stamp", () => {
    const s = new TestStream();
    const created = s.created();
    const hi = s.user("hi");
    const spec = given(created, hi);
    expect(spec.state.pendingLlmRequestTrigger).toEqual({ offset: 2, atMs: s.now, source: "external" });

    const decision = spec.atHead(s.now + 250).then(() => undefined);
    expect(onlyBatch(decision)).toEqual([
      {
        type: "agent/llm-request-requested",
        payload: {
          model: "openai/gpt-5.6-terra",
          expiresAt: new Date(s.now + 600_000).toISOString(),
          contractVersion: "7.0.0",
        },
        idempotencyKey: "agent/request/2",
      },
    ]);

    s.wait(250);
    const requested = s.requested();
    const afterRequest = given(created, hi).when(requested).then(({ state }) => {
      expect(state.openRequest).toEqual({ requestedAtOffset: 3, expiresAt: requested.payload.expiresAt, model: "openai/gpt-5.6-terra" });
      expect(state.pendingLlmRequestTrigger).toBeNull();
      expect(state.lastLlmRequestOffset).toBe(3);
      expect(state.contextItems.at(-1)).toEqual({ kind: "request", offset: 3, requestedAt: requested.createdAt });
      expect(state.autonomousTurnCount).toBe(0);
    });
    expect(afterRequest.reaction.runtimeChanged?.payload).toMatchObject({
      runtime: { triggers: { pending: 0, runnable: 0 }, llmRequests: { requested: 1 }, runningScripts: 0 },
      sinceOffset: 3,
    });

    s.wait(2000);
    const reply = s.assistant("hello!", 3);
    const settled = s.succeeded(3, "hello!");
    given(created, hi, requested, reply).when(settled).then(({ state }) => {
      expect(state.openRequest).toBeNull();
      expect(state.consecutiveLlmFailures).toBe(0);
      expect(state.contextItems.map((i) => i.kind)).toEqual(["message", "request", "message"]);
    });
    given(created, hi, requested, reply, settled).atHead(s.now + 60_000).then((d) => {
      expect(d).toEqual({ appends: [], wakeAtMs: null, adopt: null, why: [{ rule: "no-trigger" }] });
    });
  });

  it("the fold never throws, even on an event that slipped past validation", () => {
    const s = new TestStream();
    const spec = given(s.created(), s.user("hi"));
    const broken = { ...s.user("x"), payload: null } as unknown as AgentEvent;
    const state = foldAgentEvent(spec.state, broken);
    expect(state.contextItems).toEqual(spec.state.contextItems);
    expect(state.pendingLlmRequestTrigger).toEqual(spec.state.pendingLlmRequestTrigger);
    expect(state.lastFoldedOffset).toBe(broken.offset);
  });

  it("nothing is scheduled before agent/created", () => {
    const s = new TestStream();
    const hi = s.user("hi");
    given(hi).atHead(s.now + 10_000).then((d) => expect(d.appends).toEqual([]));
  });
});

describe("debounce", () => {
  it("coalesces two quick messages into one request keyed on the newest trigger", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("first")];
    s.wait(100);
    const second = s.user("second");
    const spec = given(...events, second);
    spec.atHead(s.now + 100).then((d) => {
      expect(d.appends).toEqual([]);
      expect(d.wakeAtMs).toBe(s.now + 250);
    });
    spec.atHead(s.now + 250).then((d) => {
      expect(onlyBatch(d)[0]?.idempotencyKey).toBe(`agent/request/${second.offset}`);
    });
  });

  it("holds the birth window at 60 s and releases it when the worker lowers the debounce", () => {
    const s = new TestStream();
    const birth = [s.created(), s.configured({ interpretResponses: true, llmRequestDebounceMs: 60_000 }), s.user("hi")];
    given(...birth).atHead(s.now + 5_000).then((d) => {
      expect(d.appends).toEqual([]);
      expect(d.wakeAtMs).toBe(s.now + 60_000);
    });
    s.wait(2_000);
    const workerConfig = s.configured({ interpretResponses: false, llmRequestDebounceMs: 250 });
    given(...birth, workerConfig).atHead(s.now).then((d) => {
      // trigger.atMs + 250 has long passed: the held turn fires at once.
      expect(onlyBatch(d)[0]?.type).toBe("agent/llm-request-requested");
    });
  });

  it("with a dead worker the request goes out right after the 60 s window", () => {
    const s = new TestStream();
    const birth = [s.created(), s.configured({ llmRequestDebounceMs: 60_000 }), s.user("hi")];
    const triggerAt = s.now;
    given(...birth).atHead(triggerAt + 59_999).then((d) => expect(d.appends).toEqual([]));
    given(...birth).atHead(triggerAt + 60_000).then((d) => {
      expect(onlyBatch(d)[0]).toMatchObject({ type: "agent/llm-request-requested", idempotencyKey: "agent/request/3" });
    });
  });

  it("an invalid merged config is ignored and the previous config stays", () => {
    const s = new TestStream();
    const created = s.created();
    const bad = s.configured({ llmRequestRetryPolicy: { maxAttempts: 2, backoffBaseMs: 5, backoffMaxMs: 10 } });
    const state = given(created).when(bad).then(() => undefined).state;
    expect(state.config.llmRequestRetryPolicy).toEqual({ maxAttempts: 2, backoffBaseMs: 5, backoffMaxMs: 10 });
    // compactionTriggerFraction 0 fails the whole-config validation: nothing changes.
    const invalid = { ...bad, offset: 3, payload: { config: { compactionTriggerFraction: 0 } } } as typeof bad;
    given(created, bad).when(invalid).then(({ state: after, before }) => expect(after.config).toBe(before.config));
  });
});

describe("requests", () => {
  it("a message arriving while a request is open waits behind it", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("one"), s.requested()];
    const queued = s.user("two");
    const spec = given(...events, queued);
    expect(spec.state.pendingLlmRequestTrigger?.offset).toBe(queued.offset);
    spec.atHead(s.now + 10_000, [3]).then((d) => expect(d.appends).toEqual([]));
    const settled = s.succeeded(3);
    given(...events, queued, settled).atHead(s.now + 250).then((d) => {
      expect(onlyBatch(d)[0]?.idempotencyKey).toBe(`agent/request/${queued.offset}`);
    });
  });

  it("ignores a stray llm-request-requested: no trigger pending means no stamp", () => {
    const s = new TestStream();
    given(s.created()).when(s.requested()).then(({ state, before }) => {
      expect(state.contextItems).toEqual([]);
      expect(state.openRequest).toBeNull();
      expect(state.lastLlmRequestOffset).toBe(before.lastLlmRequestOffset);
    });
  });

  it("ignores a second request while one is open", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("one"), s.requested(), s.user("two")];
    given(...events).when(s.requested()).then(({ state }) => {
      expect(state.openRequest?.requestedAtOffset).toBe(3);
      expect(state.contextItems.filter((i) => i.kind === "request")).toHaveLength(1);
    });
  });

  it("ignores a request while the agent is paused", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("one"), s.event("agent/paused", { reason: "operator" })];
    given(...events).when(s.requested()).then(({ state, before }) => {
      expect(state.openRequest).toBeNull();
      expect(state.contextItems).toEqual(before.contextItems);
      expect(state.pendingLlmRequestTrigger).toEqual(before.pendingLlmRequestTrigger);
    });
  });

  it("drops a zombie's assistant output entirely", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("one"), s.requested(), s.succeeded(3), s.user("two"), s.requested()];
    given(...events).when(s.assistant("late output for @3", 3)).then(({ state, before }) => {
      expect(state.contextItems).toEqual(before.contextItems);
    });
    given(...events).when(s.assistant("fresh output for @6", 6)).then(({ state }) => {
      expect(state.contextItems.at(-1)).toMatchObject({ kind: "message", payload: { content: "fresh output for @6" } });
    });
  });

  it("counts agent-loop turns and resets them on external input", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("go"), s.requested(), s.succeeded(3), s.scriptResult("agent-output:4")];
    given(...events).when(s.requested()).then(({ state }) => expect(state.autonomousTurnCount).toBe(1));
  });
});
