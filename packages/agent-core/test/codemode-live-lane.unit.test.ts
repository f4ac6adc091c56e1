// Given the ephemeral chunk flushes of a streaming reply, when the live lane folds them, then
// it publishes prose and script previews as increments that add up to the final split, and
// stops at a gap in the sequence.
import type { AgentEvent } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { applyChunksEvent, createLiveLaneState, endRequest, liveDeltas, type LiveDelta, type LiveLaneState } from "../src/codemode/index.ts";

const chat = (content: string) => ({ choices: [{ index: 0, delta: { content } }] });
const chatDone = { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] };
const flush = (sequence: number, chunks: unknown[], llmRequestOffset = 31): AgentEvent => ({
  streamPath: "/agents/web/demo",
  offset: 0,
  createdAt: "2026-08-24T16:51:12.000Z",
  type: "agent/llm-response-chunks",
  payload: { chunks, llmRequestOffset, sequence },
  ephemeral: true,
});

function run(events: AgentEvent[], state: LiveLaneState = createLiveLaneState()): { state: LiveLaneState; deltas: LiveDelta[] } {
  const deltas: LiveDelta[] = [];
  for (const event of events) {
    const step = applyChunksEvent(state, event);
    state = step.state;
    deltas.push(...step.deltas);
  }
  return { state, deltas };
}

const prose = (deltas: LiveDelta[]) =>
  deltas.filter((d) => d.type === "render/message-delta").map((d) => (d.payload as { text: string }).text).join("");
const code = (deltas: LiveDelta[]) =>
  deltas.filter((d) => d.type === "render/script-delta").map((d) => (d.payload as { code: string }).code).join("");

/** Splits a reply into pieces of `size` characters, one chat chunk each, `perFlush` per event. */
function stream(reply: string, size: number, perFlush: number): AgentEvent[] {
  const chunks: unknown[] = [];
  for (let i = 0; i < reply.length; i += size) chunks.push(chat(reply.slice(i, i + size)));
  chunks.push(chatDone);
  const events: AgentEvent[] = [];
  for (let i = 0; i < chunks.length; i += perFlush) events.push(flush(events.length, chunks.slice(i, i + perFlush)));
  return events;
}

describe("live lane", () => {
  const reply = 'let me check!\n<codemode status="Counting open PRs">\nreturn (await itx.repo.listPulls({ state: "open" })).length;\n</codemode>\nback soon';

  it.each([
    [1, 1],
    [3, 2],
    [7, 5],
    [1000, 1],
  ])("tag reply streamed %d chars per chunk, %d chunks per flush: increments add up to prose and code", (size, perFlush) => {
    const { deltas } = run(stream(reply, size, perFlush));
    expect(prose(deltas)).toBe("let me check!\n\nback soon");
    expect(code(deltas)).toBe('return (await itx.repo.listPulls({ state: "open" })).length;');
    for (const d of deltas) {
      expect(d.ephemeral).toBe(true);
      expect(d.payload.llmRequestOffset).toBe(31);
    }
    const scriptDeltas = deltas.filter((d) => d.type === "render/script-delta");
    expect(scriptDeltas[0]?.payload).toMatchObject({ status: "Counting open PRs" });
  });

  it("never shows a partial marker as prose or code", () => {
    const { deltas } = run(stream(reply, 2, 1));
    for (const d of deltas) {
      const text = d.type === "render/message-delta" ? d.payload.text : d.payload.code;
      expect(text).not.toContain("<code");
      expect(text).not.toContain("</");
    }
  });

  it("streams a fenced script from Responses API delta events", () => {
    const fenced = "Sure.\n```ts\nasync (itx) => {\n  return 1;\n}\n```\n";
    const events = [
      flush(0, [{ type: "response.output_text.delta", delta: fenced.slice(0, 20) }]),
      flush(1, [{ type: "response.output_text.delta", delta: fenced.slice(20) }, { type: "response.completed" }]),
    ];
    const { deltas } = run(events, createLiveLaneState({ dialect: "fenced" }));
    expect(prose(deltas)).toBe("Sure.");
    expect(code(deltas)).toBe("async (itx) => {\n  return 1;\n}");
  });

  it("stops deltas for the turn at a gap in the chunk sequence", () => {
    const events = stream("hello there, this is a long prose answer", 5, 1);
    const first = run(events.slice(0, 2));
    expect(prose(first.deltas)).toBe("hello ther");
    const afterGap = run(events.slice(3), first.state); // sequence 2 was lost
    expect(afterGap.deltas).toEqual([]);
  });

  it("a request that is first seen mid-stream gets no deltas", () => {
    expect(run([flush(4, [chat("late")])]).deltas).toEqual([]);
  });

  it("ignores a duplicate flush and keeps streaming", () => {
    const events = stream("abc def", 2, 1);
    const { deltas } = run([events[0] as AgentEvent, events[0] as AgentEvent, ...events.slice(1)]);
    expect(prose(deltas)).toBe("abc def");
  });

  it("keeps separate requests apart and forgets the oldest beyond its bound", () => {
    let state = createLiveLaneState({ maxRequests: 2 });
    for (const offset of [10, 20, 30]) state = applyChunksEvent(state, flush(0, [chat(`r${offset}`)], offset)).state;
    expect([...state.requests.keys()]).toEqual([20, 30]);
  });

  it("given a request that ended, when its lane is forgotten, then the others stay and a late flush previews nothing", () => {
    let state = createLiveLaneState();
    for (const offset of [10, 20]) state = applyChunksEvent(state, flush(0, [chat(`reply ${offset}\n`)], offset)).state;
    const ended = endRequest(state, 10);
    expect([...ended.requests.keys()]).toEqual([20]);
    expect(endRequest(ended, 10)).toBe(ended);
    // A flush of the ended request arriving late is mid-stream for a fresh lane: no deltas.
    expect(applyChunksEvent(ended, flush(1, [chat("more")], 10)).deltas).toEqual([]);
  });

  it("liveDeltas folds a run of events from a fresh lane", () => {
    const events = stream(reply, 4, 3);
    expect(liveDeltas(events)).toEqual(run(events).deltas);
    expect(liveDeltas(events, { dialect: "fenced" }).every((d) => d.type === "render/message-delta")).toBe(true);
  });

  it("ignores events other than chunk flushes", () => {
    const state = createLiveLaneState();
    const other = { ...flush(0, [chat("x")]), type: "agent/created", payload: {} } as AgentEvent;
    expect(applyChunksEvent(state, other)).toEqual({ state, deltas: [] });
  });

  it("given a 390 KB reply dripped in 100-character flushes, when folded, then it takes time in proportion to its length, and the increments still add up to the whole split", () => {
    const proseText = "word ".repeat(40_000);
    const script = "return 1;\n".repeat(16_000);
    const long = `${proseText}\n<codemode status="Working">\n${script}</codemode>\nafter`;
    const events = stream(long, 100, 1);
    expect(events.length).toBeGreaterThan(3_500);
    const started = performance.now();
    const { deltas } = run(events);
    // One preview per flush read the whole text each time: 8 s in the reducer for this reply.
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(prose(deltas)).toBe(`${proseText.trim()}\n\nafter`);
    expect(code(deltas)).toBe(script.trim());
    // Small replies still get a preview for every flush that adds to them
    expect(run(stream(reply, 3, 1)).deltas.filter((d) => d.type === "render/message-delta").length).toBeGreaterThan(5);
  });
});
