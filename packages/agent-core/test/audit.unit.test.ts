// The stream audit, rule by rule: given a stream's events, when audited, then exactly the
// violations (or notes) the rule names, with the offsets involved.

import type { AgentEvent } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { type AuditReport, type ChatMessage, StreamAudit, auditAgentStream, renderRequest } from "../src/index.ts";
import { TestStream } from "./support/stream.ts";

const rules = (report: AuditReport) => report.violations.map((v) => v.rule);
const noteKinds = (report: AuditReport) => report.notes.map((n) => n.rule);

/** created, a user message, its request, the reply and the settlement: one clean turn. */
function cleanTurn(s = new TestStream()): { s: TestStream; events: AgentEvent[]; request: number } {
  const events: AgentEvent[] = [s.created(), s.user("hello")];
  const request = s.requested();
  events.push(request, s.assistant("hi", request.offset), s.succeeded(request.offset));
  return { s, events, request: request.offset };
}

describe("auditAgentStream", () => {
  it("given one clean turn, finds nothing to report", () => {
    const report = auditAgentStream(cleanTurn().events);
    expect(report.violations).toEqual([]);
    expect(report.notes).toEqual([]);
    expect(report).toMatchObject({ events: 5, firstOffset: 1, lastOffset: 5, requests: 1, settlements: 1 });
  });

  it("given a gap in the offsets, names the offset found where another was expected, once", () => {
    const { events } = cleanTurn();
    const report = auditAgentStream([...events.slice(0, 2), ...events.slice(3)]);
    expect(report.violations.filter((v) => v.rule === "offsets-dense")).toHaveLength(1);
    expect(report.violations[0]).toMatchObject({ rule: "offsets-dense", offsets: [4] });
    expect(report.violations[0]?.message).toBe("expected offset 3, found 4 (missing, or events this version cannot read: a newer writer's type or field)");
  });

  it("given an idempotency key twice, names both offsets", () => {
    const s = new TestStream();
    const events = [s.created(), s.event("stream/error-occurred", { message: "a" }, "k"), s.event("stream/error-occurred", { message: "b" }, "k")];
    expect(auditAgentStream(events).violations).toEqual([{ rule: "idempotency-key-unique", message: 'idempotency key "k" appears 2 times', offsets: [2, 3] }]);
  });

  it("given a request settled twice, reports the double settlement and the one that named a closed request", () => {
    const { s, events, request } = cleanTurn();
    events.push(s.failed(request));
    const report = auditAgentStream(events);
    expect(rules(report).sort()).toEqual(["request-settled-once", "settlement-names-open-request"]);
    expect(report.violations.find((v) => v.rule === "request-settled-once")?.offsets).toEqual([request, 5, 6]);
  });

  it("given two replies to one request, reports the duplicate output", () => {
    const { s, events, request } = cleanTurn();
    events.push(s.assistant("hi again", request));
    expect(auditAgentStream(events).violations).toEqual([{ rule: "reply-once", message: `request @${request} has 2 assistant replies`, offsets: [request, 4, 6] }]);
  });

  it("given a reply for a request that failed, reports it", () => {
    const s = new TestStream();
    const events: AgentEvent[] = [s.created(), s.user("hello")];
    const request = s.requested();
    events.push(request, s.failed(request.offset), s.assistant("late reply", request.offset));
    expect(rules(auditAgentStream(events))).toContain("no-reply-for-failed-request");
  });

  it("given a script started twice and settled twice, reports both; a script not yet settled is a note", () => {
    const s = new TestStream();
    const script = (id: string) => s.event("capability-host/script-run-requested", { code: "return 1", executionId: id, expiresAt: "2026-08-24T17:00:00.000Z" });
    const settled = (id: string) =>
      s.event("capability-host/script-run-settled", { executionId: id, settlement: { status: "succeeded", result: 1 } });
    const events = [
      s.created(),
      script("a"),
      s.event("capability-host/script-run-started", { executionId: "a" }),
      s.event("capability-host/script-run-started", { executionId: "a" }),
      settled("a"),
      settled("a"),
      script("b"),
    ];
    const report = auditAgentStream(events);
    expect(rules(report).sort()).toEqual(["script-settled-once", "script-started-once"]);
    expect(report.notes).toEqual([{ rule: "script-running", message: "script b has not settled yet", offsets: [7] }]);
  });

  it("given a script settled before it started, or never requested, reports the lifecycle order", () => {
    const s = new TestStream();
    const events = [
      s.created(),
      s.event("capability-host/script-run-requested", { code: "return 1", executionId: "a", expiresAt: "2026-08-24T17:00:00.000Z" }),
      s.event("capability-host/script-run-settled", { executionId: "a", settlement: { status: "succeeded", result: 1 } }),
      s.event("capability-host/script-run-started", { executionId: "a" }),
      s.event("capability-host/script-run-started", { executionId: "ghost" }),
    ];
    const report = auditAgentStream(events);
    expect(report.violations.filter((v) => v.rule === "script-lifecycle-order").map((v) => v.message)).toEqual([
      "script a was settled before it started",
      "script ghost was started or settled but never requested",
    ]);
  });

  it("given two requests whose renders are not a strict prefix, reports the pair", () => {
    const { s, events, request } = cleanTurn();
    events.push(s.user("again"));
    const second = s.requested();
    events.push(second);
    // A renderer that changes an earlier message stands for a rendering bug the audit must catch.
    let calls = 0;
    const broken = (state: Parameters<typeof renderRequest>[0]): ChatMessage[] => {
      calls += 1;
      const messages = renderRequest(state);
      return calls === 1 ? messages : messages.map((m, i) => (i === 2 ? { ...m, content: `${m.content} (changed)` } : m));
    };
    const report = auditAgentStream(events, { render: broken });
    expect(report.violations).toEqual([
      { rule: "cache-prefix", message: `request @${request}'s messages are not a strict prefix of request @${second.offset}'s (they differ at message 2)`, offsets: [request, second.offset] },
    ]);
    // With the core's own renderer the same stream is clean, and the pair was checked.
    const clean = auditAgentStream(events);
    expect(clean.violations).toEqual([]);
    expect(clean.prefixPairsChecked).toBe(1);
  });

  it("given a rewrite between two requests, notes the cache reset instead of checking the pair", () => {
    const s = new TestStream();
    const events: AgentEvent[] = [s.created(), s.section("identity", "You are a helper."), s.user("hello")];
    const first = s.requested();
    events.push(first, s.assistant("hi", first.offset), s.succeeded(first.offset));
    events.push(s.event("agents/context-rewritten", { op: "replace", key: "identity", content: "You are terse." }), s.user("again"));
    const second = s.requested();
    events.push(second);
    const report = auditAgentStream(events);
    expect(report.violations).toEqual([]);
    expect(report.prefixPairsChecked).toBe(0);
    expect(report.notes.map((n) => [n.rule, n.offsets])).toEqual([
      ["cache-reset", [first.offset, second.offset]],
      ["request-open", [second.offset]],
    ]);
  });

  it("given a user message after the last request, notes the pending turn, or names the pause", () => {
    const { s, events } = cleanTurn();
    events.push(s.user("one more"));
    expect(noteKinds(auditAgentStream(events))).toEqual(["turn-pending"]);
    events.push(s.event("agent/paused", { reason: "operator" }));
    const paused = auditAgentStream(events);
    expect(paused.notes).toEqual([{ rule: "paused", message: "the agent is paused since @7 (operator)", offsets: [6] }]);
  });

  it("given the clock, a turn overdue past the grace period is a violation, and so is an open request past its expiry", () => {
    const { s, events } = cleanTurn();
    const message = s.user("anyone there?");
    events.push(message);
    const due = Date.parse(message.createdAt) + 250; // the default debounce
    expect(rules(auditAgentStream(events, { nowMs: due + 29_000 }))).toEqual([]);
    expect(auditAgentStream(events, { nowMs: due + 31_000 }).violations).toEqual([
      { rule: "user-message-covered", message: "a turn for 1 user message(s) was due 31 s ago and never requested", offsets: [message.offset] },
    ]);

    const request = s.requested(new Date(s.now + 1000).toISOString());
    events.push(request);
    const report = auditAgentStream(events, { nowMs: s.now + 1000 + 60_000 });
    expect(report.violations).toEqual([
      { rule: "request-overdue", message: `request @${request.offset} expired at ${request.payload.expiresAt}, 60 s ago, and was never settled`, offsets: [request.offset] },
    ]);
  });

  it("given a stream that was never born, says so instead of a violation", () => {
    const s = new TestStream();
    expect(noteKinds(auditAgentStream([s.user("hello?")]))).toEqual(["not-born"]);
  });
});

describe("StreamAudit (the audit taken a page at a time)", () => {
  it("given a stream with violations and notes taken in pages, with reports asked between them, ends with the whole stream's report", () => {
    // Given two turns, the first settled twice and the second still open, and a key used twice
    const { s, events, request } = cleanTurn();
    events.push(s.failed(request), s.event("stream/error-occurred", { message: "a" }, "k"), s.user("again"), s.event("stream/error-occurred", { message: "b" }, "k"));
    const whole = auditAgentStream(events);
    expect(rules(whole).sort()).toEqual(["idempotency-key-unique", "request-settled-once", "settlement-names-open-request"]);
    // When it is taken three events at a time, its report asked after each page
    const audit = new StreamAudit();
    const midway: AuditReport[] = [];
    for (let i = 0; i < events.length; i += 3) {
      for (const e of events.slice(i, i + 3)) audit.add(e);
      midway.push(audit.report());
    }
    // Then each report covers the events taken so far, and the last is the whole stream's
    expect(midway.map((r) => r.lastOffset)).toEqual([3, 6, 9]);
    expect(midway[0]!.violations).toEqual([]);
    expect(audit.report()).toEqual(whole);
  });
});
