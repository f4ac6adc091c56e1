// Head-of-stream decisions beyond the happy path: expiry and adoption, retries with backoff,
// the autonomous-turn breaker, resume, and stale pauses.

import { describe, expect, it } from "vitest";
import { given, onlyBatch } from "./support/given.ts";
import { TestStream } from "./support/stream.ts";

describe("expiry and adoption", () => {
  const s = new TestStream();
  const events = [s.created(), s.user("hi"), s.requested(new Date(s.now + 600_000).toISOString())];
  const expiresAtMs = s.now + 600_000;

  it("adopts an open request nobody here is driving while more than 30 s are left", () => {
    given(...events).atHead(expiresAtMs - 30_001).then((d) => {
      expect(d.appends).toEqual([]);
      expect(d.adopt).toEqual({ requestOffset: 3, expiresAt: new Date(expiresAtMs).toISOString(), model: "openai/gpt-5.6-terra" });
      expect(d.wakeAtMs).toBe(expiresAtMs - 30_000);
    });
  });

  it("expires instead of adopting with 30 s or less left", () => {
    given(...events).atHead(expiresAtMs - 30_000).then((d) => {
      expect(d.adopt).toBeNull();
      expect(onlyBatch(d)).toEqual([
        {
          type: "agent/llm-request-settled",
          payload: { requestOffset: 3, result: { status: "cancelled", reason: "expired" } },
          idempotencyKey: "agent/settle/3",
        },
        {
          type: "stream/error-occurred",
          payload: { message: "LLM request @3 expired before it ran; the pending turn was dropped. A new message starts fresh." },
          idempotencyKey: "agent/expiry-error/3",
        },
      ]);
    });
  });

  it("does not expire a request this incarnation is running", () => {
    given(...events).atHead(expiresAtMs, [3]).then((d) => {
      expect(d).toEqual({ appends: [], wakeAtMs: null, adopt: null, why: [{ rule: "request-running", requestOffset: 3 }, { rule: "no-trigger" }] });
    });
  });

  it("adopts even while paused", () => {
    const paused = s.event("agent/paused", { reason: "operator" });
    given(...events, paused).atHead(expiresAtMs - 60_000).then((d) => expect(d.adopt?.requestOffset).toBe(3));
  });

  it("the expiry settlement closes the request and schedules nothing", () => {
    const batch = onlyBatch(given(...events).atHead(expiresAtMs).then(() => undefined));
    const settle = s.event("agent/llm-request-settled", batch[0]?.payload as never);
    given(...events).when(settle).then(({ state }) => {
      expect(state.openRequest).toBeNull();
      expect(state.pendingLlmRequestTrigger).toBeNull();
    });
  });
});

describe("retry with backoff", () => {
  it("schedules a retry at the settlement with 2^(failures-1) × base backoff, capped", () => {
    const s = new TestStream();
    const events = [s.created(), s.configured({ llmRequestRetryPolicy: { maxAttempts: 5, backoffBaseMs: 10_000, backoffMaxMs: 25_000 } })];
    events.push(s.user("hi"));
    const expected = [10_000, 20_000, 25_000, 25_000];
    for (const backoff of expected) {
      s.wait(300);
      const request = s.requested();
      s.wait(1_000);
      const failed = s.failed(request.offset);
      events.push(request, failed);
      const spec = given(...events);
      expect(spec.state.pendingLlmRequestTrigger).toEqual({ offset: failed.offset, atMs: s.now, source: "agent-loop" });
      spec.atHead(s.now + 250 + backoff - 1).then((d) => {
        expect(d.appends).toEqual([]);
        expect(d.wakeAtMs).toBe(s.now + 250 + backoff);
      });
      spec.atHead(s.now + 250 + backoff).then((d) => {
        expect(onlyBatch(d)[0]?.idempotencyKey).toBe(`agent/request/${failed.offset}`);
      });
      s.wait(250 + backoff);
    }
  });

  it("gives up at maxAttempts without pausing, until new external input", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("hi")];
    for (let attempt = 1; attempt <= 3; attempt += 1) {
      const request = s.requested();
      events.push(request, s.failed(request.offset));
    }
    const spec = given(...events);
    expect(spec.state.consecutiveLlmFailures).toBe(3);
    expect(spec.state.pendingLlmRequestTrigger).toBeNull();
    expect(spec.state.paused).toBeNull();
    spec.atHead(s.now + 3_600_000).then((d) => expect(d.appends).toEqual([]));
    const fresh = s.user("again?");
    given(...events, fresh).atHead(s.now + 250).then((d) => {
      // External input resets the failures: no backoff.
      expect(onlyBatch(d)[0]?.idempotencyKey).toBe(`agent/request/${fresh.offset}`);
    });
  });
});

describe("the autonomous breaker", () => {
  function loopedAgent(turns: number) {
    const s = new TestStream();
    const events = [s.created(), s.configured({ maxAutonomousTurns: turns }), s.user("go")];
    let request = s.requested();
    events.push(request, s.succeeded(request.offset));
    for (let i = 0; i < turns; i += 1) {
      events.push(s.scriptResult(`agent-output:${s.nextOffset}`));
      request = s.requested();
      events.push(request, s.succeeded(request.offset));
    }
    const result = s.scriptResult(`agent-output:${s.nextOffset}`);
    events.push(result);
    return { s, events, trigger: result.offset };
  }

  it("pauses with the exact reason once the agent-loop turn count reaches the limit", () => {
    const { s, events, trigger } = loopedAgent(2);
    const spec = given(...events);
    expect(spec.state.autonomousTurnCount).toBe(2);
    spec.atHead(s.now + 10_000).then((d) => {
      expect(onlyBatch(d)).toEqual([
        {
          type: "agent/paused",
          payload: { reason: "autonomous turn limit reached (2 consecutive turns without external input)", triggerOffset: trigger },
          idempotencyKey: `agent/pause/${trigger}`,
        },
      ]);
    });
  });

  it("the pause parks the agent-loop trigger; an external message resumes and re-anchors", () => {
    const { s, events, trigger } = loopedAgent(2);
    const pause = s.event("agent/paused", { reason: "limit", triggerOffset: trigger });
    const parked = given(...events, pause);
    expect(parked.state.paused).toEqual({ reason: "limit", atOffset: pause.offset });
    expect(parked.state.pendingLlmRequestTrigger).toBeNull();
    parked.atHead(s.now + 60_000).then((d) => expect(d.appends).toEqual([]));

    s.wait(5_000);
    const message = s.user("keep going");
    given(...events, pause, message).atHead(s.now).then((d) => {
      expect(onlyBatch(d)).toEqual([
        { type: "agent/resumed", payload: { reason: "external input" }, idempotencyKey: `agent/resume/${message.offset}` },
      ]);
    });
    s.wait(40);
    const resumed = s.event("agent/resumed", { reason: "external input" });
    const after = given(...events, pause, message, resumed);
    expect(after.state.paused).toBeNull();
    expect(after.state.autonomousTurnCount).toBe(0);
    expect(after.state.pendingLlmRequestTrigger).toEqual({ offset: resumed.offset, atMs: s.now, source: "external" });
    after.atHead(s.now + 250).then((d) => {
      expect(onlyBatch(d)[0]).toMatchObject({
        idempotencyKey: `agent/request/${resumed.offset}`,
        payload: { expiresAt: new Date(s.now + 600_000).toISOString() },
      });
    });
  });

  it("a stale pause (its trigger older than the latest external input) is ignored", () => {
    const { s, events, trigger } = loopedAgent(2);
    const message = s.user("new input");
    const stalePause = s.event("agent/paused", { reason: "limit", triggerOffset: trigger });
    given(...events, message).when(stalePause).then(({ state }) => {
      expect(state.paused).toBeNull();
      expect(state.pendingLlmRequestTrigger?.offset).toBe(message.offset);
    });
  });

  it("an operator pause keeps an external trigger, which then resumes the agent", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("hi")];
    const pause = s.event("agent/paused", { reason: "operator" });
    const spec = given(...events, pause);
    expect(spec.state.pendingLlmRequestTrigger?.offset).toBe(2);
    spec.atHead(s.now).then((d) => expect(onlyBatch(d)[0]?.type).toBe("agent/resumed"));
  });
});
