// Why the head decision is what it is, given / when / then: the debounce, the birth hold, the
// backoff after failures, the autonomous-turn breaker, expiry and adoption, pauses and a turn
// waiting behind an open request each name their rule, with the times they computed.

import { describe, expect, it } from "vitest";
import { BIRTH_WINDOW_DEBOUNCE_MS, EXPIRY_MARGIN_MS } from "../src/index.ts";
import { given } from "./support/given.ts";
import { TestStream } from "./support/stream.ts";

const iso = (ms: number) => new Date(ms).toISOString();

describe("the head decision says why", () => {
  it("a stream never born decides nothing", () => {
    given().atHead(0).then((d) => expect(d.why).toEqual([{ rule: "not-born" }]));
  });

  it("a turn waits out the debounce, then is due", () => {
    const s = new TestStream();
    const spec = given(s.created(), s.configured({ llmRequestDebounceMs: 1_000 }), s.user("hi"));
    const waiting = { triggerOffset: 3, debounceMs: 1_000, birthHold: false, backoffMs: 0, consecutiveFailures: 0, dueAt: iso(s.now + 1_000) };
    spec.atHead(s.now + 999).then((d) => {
      expect(d.why).toEqual([{ rule: "turn-waits", ...waiting }]);
      expect(d.wakeAtMs).toBe(s.now + 1_000);
    });
    spec.atHead(s.now + 1_000).then((d) => {
      expect(d.why).toEqual([{ rule: "turn-due", ...waiting }]);
      expect(d.appends.flat().map((e) => e.type)).toEqual(["agent/llm-request-requested"]);
    });
  });

  it("the birth window holds the first turn for 60 s until a worker configures the agent", () => {
    const s = new TestStream();
    const born = [s.created(), s.configured({ interpretResponses: true, llmRequestDebounceMs: BIRTH_WINDOW_DEBOUNCE_MS })];
    const hi = s.user("hi");
    given(...born, hi).atHead(s.now + 1_000).then((d) => {
      expect(d.why).toEqual([expect.objectContaining({ rule: "turn-waits", birthHold: true, dueAt: iso(s.now + BIRTH_WINDOW_DEBOUNCE_MS) })]);
    });
    const worker = s.configured({ interpretResponses: false, llmRequestDebounceMs: 250 });
    given(...born, hi, worker).atHead(s.now + 1_000).then((d) => {
      expect(d.why).toEqual([expect.objectContaining({ rule: "turn-due", birthHold: false, debounceMs: 250 })]);
    });
  });

  it("after a failure the retry waits debounce plus backoff", () => {
    const s = new TestStream();
    const events = [s.created(), s.configured({ llmRequestRetryPolicy: { maxAttempts: 5, backoffBaseMs: 10_000, backoffMaxMs: 25_000 } }), s.user("hi")];
    const request = s.requested();
    const failed = s.failed(request.offset);
    given(...events, request, failed).atHead(s.now).then((d) => {
      expect(d.why).toEqual([expect.objectContaining({ rule: "turn-waits", backoffMs: 10_000, consecutiveFailures: 1, dueAt: iso(s.now + 250 + 10_000) })]);
    });
  });

  it("the autonomous-turn breaker names the count and the limit", () => {
    const s = new TestStream();
    const events = [s.created(), s.configured({ maxAutonomousTurns: 1 }), s.user("go")];
    let request = s.requested();
    events.push(request, s.succeeded(request.offset), s.scriptResult(`agent-output:${s.nextOffset}`));
    request = s.requested();
    events.push(request, s.succeeded(request.offset));
    const result = s.scriptResult(`agent-output:${s.nextOffset}`);
    given(...events, result).atHead(s.now + 10_000).then((d) => {
      expect(d.why).toEqual([{ rule: "breaker", triggerOffset: result.offset, autonomousTurns: 1, maxAutonomousTurns: 1 }]);
    });
  });

  it("an open request is adopted until the expiry margin, then expired; a newer trigger waits behind it", () => {
    const s = new TestStream();
    const expiresAtMs = s.now + 600_000;
    const events = [s.created(), s.user("hi"), s.requested(iso(expiresAtMs)), s.user("more")];
    given(...events).atHead(expiresAtMs - EXPIRY_MARGIN_MS - 1).then((d) => {
      expect(d.why).toEqual([
        { rule: "request-adopted", requestOffset: 3, expiresAt: iso(expiresAtMs) },
        { rule: "after-open-request", triggerOffset: 4, requestOffset: 3 },
      ]);
    });
    given(...events).atHead(expiresAtMs - EXPIRY_MARGIN_MS).then((d) => {
      expect(d.why[0]).toEqual({ rule: "request-expired", requestOffset: 3, expiresAt: iso(expiresAtMs) });
    });
  });

  it("a paused agent resumes on external input", () => {
    const s = new TestStream();
    const events = [s.created(), s.event("agent/paused", { reason: "operator" })];
    const hi = s.user("hi");
    given(...events, hi).atHead(s.now).then((d) => expect(d.why).toEqual([{ rule: "resume", triggerOffset: hi.offset }]));
  });
});
