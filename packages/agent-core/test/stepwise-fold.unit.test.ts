// Given a stream folded event by event through the stepwise fold (the reducer's and the audit's
// way), then every state it answers is the one folding each event on its own gives, states it
// published are never changed by later events, and it copies the context only after a state is
// published, not per event (per event it had been quadratic: 40 000 messages held the reducer 17 s).

import type { AgentEvent } from "@agentrt/contract";
import { afterEach, describe, expect, it, vi } from "vitest";
import { foldAgentEvent, foldAgentEvents, initialAgentState, StepwiseFold } from "../src/index.ts";
import type { AgentState } from "../src/state.ts";
import { TestStream } from "./support/stream.ts";

afterEach(() => vi.restoreAllMocks());

/** A deterministic mixed stream: messages, keyed sections (new and repeated), turns, rewrites, a compaction. */
function mixedStream(length: number, seed = 7): AgentEvent[] {
  const s = new TestStream();
  let x = seed;
  const next = () => (x = (x * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  const events: AgentEvent[] = [s.created()];
  let open: number | undefined;
  while (events.length < length) {
    const r = next();
    if (r < 0.35) events.push(s.user(`message ${events.length}`));
    else if (r < 0.6) events.push(s.section(`k${Math.floor(next() * 40)}`, `content ${events.length}`));
    else if (r < 0.7 && open === undefined) {
      const request = s.requested();
      open = request.offset;
      events.push(request);
    } else if (r < 0.8 && open !== undefined) {
      events.push(s.assistant(`reply ${events.length}`, open), s.succeeded(open));
      open = undefined;
    } else if (r < 0.85) events.push(s.event("agents/context-rewritten", { op: "replace", key: `k${Math.floor(next() * 40)}`, content: `rewritten ${events.length}` }));
    else if (r < 0.88) events.push(s.event("agents/context-rewritten", { op: "delete", key: `k${Math.floor(next() * 40)}` }));
    else if (r < 0.89) events.push(s.context({ role: "developer", content: "summary so far", compaction: { replacesHistoryThrough: s.nextOffset - 1 }, llmRequestPolicy: { behaviour: "dont-trigger-request" } }));
    else events.push(s.user(`more ${events.length}`, { llmRequestPolicy: { behaviour: "dont-trigger-request" } }));
  }
  return events;
}

describe("the stepwise fold", () => {
  it("given a mixed stream, when folded event by event, then each state equals folding that event on its own, and the end equals one batch fold", () => {
    const events = mixedStream(600);
    const fold = new StepwiseFold(initialAgentState(events[0]!.streamPath));
    let oracle: AgentState = initialAgentState(events[0]!.streamPath);
    for (const [i, event] of events.entries()) {
      const { before, after } = fold.apply(event);
      const { contextItems: _before, ...oracleBefore } = oracle;
      expect(before).toEqual(oracleBefore);
      oracle = foldAgentEvent(oracle, event);
      const { contextItems: _after, ...oracleAfter } = oracle;
      expect(after).toEqual(oracleAfter);
      // Published now and then, the whole state matches too
      if (i % 37 === 0) expect(fold.state).toEqual(oracle);
    }
    expect(fold.state).toEqual(oracle);
    expect(foldAgentEvents(initialAgentState(events[0]!.streamPath), events)).toEqual(oracle);
  });

  it("given a published state, when later events fold, then it is not changed", () => {
    const s = new TestStream();
    const fold = new StepwiseFold(initialAgentState(s.streamPath));
    fold.apply(s.created());
    fold.apply(s.section("a", "first"));
    const published = fold.state;
    const snapshot = structuredClone(published);
    fold.apply(s.user("hello"));
    fold.apply(s.section("a", "second"));
    fold.apply(s.section("b", "third"));
    expect(published).toEqual(snapshot);
    expect(fold.state.contextItems).toHaveLength(3);
  });

  it("given many events and no state asked for, when folded, then the context is copied once, not per event", () => {
    const s = new TestStream();
    const events = [s.created(), ...Array.from({ length: 2_000 }, (_, i) => s.user(`m${i}`, { llmRequestPolicy: { behaviour: "dont-trigger-request" } }))];
    const fold = new StepwiseFold(initialAgentState(s.streamPath));
    const slice = vi.spyOn(Array.prototype, "slice");
    for (const event of events) fold.apply(event);
    const copies = slice.mock.calls.length;
    slice.mockRestore();
    // The first write copies the initial state's (empty) items; per event it was 2 000 copies
    expect(copies).toBeLessThanOrEqual(1);
    expect(fold.state.contextItems).toHaveLength(2_000);
  });

  it("given 2 000 distinct keys folded in one batch, when a key comes again after a request, then it supersedes its latest occurrence (the fold's key index agrees with the stream)", () => {
    const s = new TestStream();
    const events = [s.created(), ...Array.from({ length: 2_000 }, (_, i) => s.section(`key-${i}`, `c${i}`))];
    // A repeated key after a request supersedes at the tail, pointing at its latest occurrence
    const go = s.user("go");
    const request = s.requested();
    const again = s.section("key-1000", "changed");
    const state = foldAgentEvents(initialAgentState(s.streamPath), [...events, go, request, again]);
    const last = state.contextItems.at(-1)!;
    // key-1000 was written at offset 1 002 (the birth is 1, key-0 is 2)
    expect(last).toMatchObject({ kind: "section", key: "key-1000", offset: again.offset, supersedes: 1_002 });
    expect(state.contextItems).toHaveLength(2_003);
  });
});
