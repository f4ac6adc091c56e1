// The cache property (rendering.md "Cache stability"): without rewrites or compaction, every
// request's messages are a strict prefix of the next request's. Checked on 50 seeded random
// streams that mix everything else the contract allows, driven by the real head decisions
// and reactions. Each request is also rendered incrementally and must match byte for byte.

import type { AgentEvent, EventInput } from "@agentrt/contract";
import { prng } from "@agentrt/testing";
import { describe, expect, it } from "vitest";
import {
  type AgentState,
  type ChatMessage,
  IncrementalRequestRenderer,
  decideAtHead,
  foldAgentEvent,
  foldAgentEvents,
  initialAgentState,
  interruptBatch,
  reactToEvent,
  renderRequest,
} from "../src/index.ts";
import { PATH, TestStream } from "./support/stream.ts";

interface Run {
  requests: { offset: number; messages: ChatMessage[]; incremental: ChatMessage[] }[];
  events: AgentEvent[];
  state: AgentState;
}

function randomRun(seed: number, steps: number): Run {
  const rnd = prng(seed);
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const s = new TestStream(PATH);
  const renderer = new IncrementalRequestRenderer();
  const run: Run = { requests: [], events: [], state: initialAgentState(PATH) };
  let state: AgentState = initialAgentState(PATH);
  const keys = ["identity", "style", "tools", "project/agents-md"];

  const commit = (event: AgentEvent): void => {
    const before = state;
    state = foldAgentEvent(before, event);
    run.events.push(event);
    run.state = state;
    if (event.type === "agent/llm-request-requested" && state.openRequest?.requestedAtOffset === event.offset && before.openRequest === null) {
      run.requests.push({ offset: event.offset, messages: renderRequest(state), incremental: renderer.render(state) });
    }
    const reaction = reactToEvent(before, event, state, { codemode: false, projectWorker: null });
    const batches: EventInput[][] = [...reaction.appends];
    if (reaction.interrupt !== null) batches.push(interruptBatch(reaction.interrupt.requestOffset, rnd() < 0.5 ? "partial…" : undefined));
    for (const input of batches.flat()) commit(s.commit(input));
  };

  commit(s.created());
  for (let i = 0; i < 3; i += 1) commit(s.section(pick(keys), `birth ${i}`));
  for (let step = 0; step < steps; step += 1) {
    s.wait(Math.floor(rnd() * 400));
    const open = state.openRequest?.requestedAtOffset;
    const roll = rnd();
    if (roll < 0.2) commit(s.user(`user ${step}`, rnd() < 0.15 ? { llmRequestPolicy: { behaviour: "interrupt-current-request" } } : {}));
    else if (roll < 0.3) commit(s.section(pick(keys), `update ${step}`, pick(["system", "developer"] as const)));
    else if (roll < 0.4 && open !== undefined) commit(s.assistant(`reply ${step}`, open));
    else if (roll < 0.45) commit(s.assistant(`zombie ${step}`, Math.max(1, (open ?? 1) - 1)));
    else if (roll < 0.55 && open !== undefined) commit(pick([s.succeeded(open), s.failed(open)]));
    else if (roll < 0.6) commit(s.requested()); // possibly stray: ignored by the fold
    else if (roll < 0.65) commit(s.scriptResult(`agent-output:${step}`));
    else if (roll < 0.7) commit(s.context({ role: "developer", content: `mail ${step}`, actor: { type: "agent", path: "/agents/web/peer" } }));
    else if (roll < 0.74) commit(s.event("agents/web-message-sent", { message: `sent ${step}` }));
    else if (roll < 0.77) commit(s.event("stream/error-occurred", { message: `error ${step}` }));
    else if (roll < 0.8) commit(s.event("agent/summary-updated", { activity: `doing ${step}`, waitingFor: "user_input" }));
    else if (roll < 0.82) commit(s.event("agent/paused", { reason: "operator" }));
    else {
      // The reducer at the head: resume, breaker, debounced request, expiry.
      s.wait(Math.floor(rnd() * 20_000));
      const decision = decideAtHead(state, { nowMs: s.now, runningRequestOffsets: open === undefined ? [] : [open] });
      for (const input of decision.appends.flat()) commit(s.commit(input));
    }
  }
  return run;
}

const isStrictPrefix = (a: readonly ChatMessage[], b: readonly ChatMessage[]): boolean =>
  a.length < b.length && a.every((m, i) => m.role === b[i]?.role && m.content === b[i]?.content);

describe("cache stability", () => {
  it("across 50 seeded random streams every request is a strict prefix of the next", () => {
    let checkedPairs = 0;
    for (let seed = 1; seed <= 50; seed += 1) {
      const run = randomRun(seed, 200);
      expect(run.requests.length, `seed ${seed} made too few requests to prove anything`).toBeGreaterThanOrEqual(3);
      for (const request of run.requests) expect(request.incremental, `seed ${seed} @${request.offset}`).toEqual(request.messages);
      for (let i = 1; i < run.requests.length; i += 1) {
        const prev = run.requests[i - 1]!;
        const next = run.requests[i]!;
        expect(isStrictPrefix(prev.messages, next.messages), `seed ${seed}: @${prev.offset} is not a prefix of @${next.offset}`).toBe(true);
        checkedPairs += 1;
      }
    }
    expect(checkedPairs).toBeGreaterThan(150);
  }, 30_000);

  it("folding a whole stream at once gives the same state as folding it event by event", () => {
    for (let seed = 101; seed <= 110; seed += 1) {
      const run = randomRun(seed, 200);
      expect(foldAgentEvents(initialAgentState(PATH), run.events), `seed ${seed}`).toEqual(run.state);
    }
  }, 30_000);

  it("the check itself catches a broken prefix", () => {
    const a = [{ role: "system", content: "x" }, { role: "user", content: "hi" }] as ChatMessage[];
    expect(isStrictPrefix(a, [...a, { role: "developer", content: "Requested at: t" }])).toBe(true);
    expect(isStrictPrefix(a, [a[0]!, { role: "user", content: "hi!" }, { role: "developer", content: "t" }])).toBe(false);
    expect(isStrictPrefix(a, a)).toBe(false);
  });
});
