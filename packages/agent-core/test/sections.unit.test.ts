// Keyed sections and history rewriting (contract.md "How each event folds", rendering.md):
// coalesce before send, supersede after send, rewrites, and compaction cut-offs — checked on
// the rendered messages, which is what the cache and the model actually see.

import { describe, expect, it } from "vitest";
import { PROTOCOL_PROMPT, renderRequest } from "../src/index.ts";
import { given } from "./support/given.ts";
import { TestStream } from "./support/stream.ts";

const doc = (...blocks: [string, string][]) => blocks.map(([k, c]) => `<section key="${k}">\n${c}\n</section>`).join("\n\n");

function sentStream() {
  const s = new TestStream();
  const events = [s.created(), s.section("identity", "v1"), s.section("style", "terse"), s.user("hi"), s.requested()];
  events.push(s.succeeded(5));
  return { s, events };
}

describe("keyed sections", () => {
  it("first-appearance order: file order becomes offset order becomes document order", () => {
    const s = new TestStream();
    const state = given(s.created(), s.section("b", "B"), s.section("a", "A"), s.section("c", "C")).state;
    expect(renderRequest(state)).toEqual([
      { role: "system", content: PROTOCOL_PROMPT },
      { role: "system", content: doc(["b", "B"], ["a", "A"], ["c", "C"]) },
    ]);
  });

  it("re-adding a key nobody has sent coalesces in place: new text at the old position", () => {
    const s = new TestStream();
    const events = [s.created(), s.section("identity", "v1"), s.section("style", "verbose")];
    const update = s.section("identity", "v2");
    given(...events).when(update).then(({ state }) => {
      expect(state.contextItems[0]).toEqual({ kind: "section", offset: update.offset, key: "identity", payload: update.payload });
      expect(renderRequest(state)[1]?.content).toBe(doc(["identity", "v2"], ["style", "verbose"]));
    });
  });

  it("re-adding a sent key appends at the tail with supersedes, leaving the document alone", () => {
    const { s, events } = sentStream();
    const update = s.section("identity", "v2");
    given(...events).when(update).then(({ state }) => {
      const messages = renderRequest(state);
      expect(messages[1]?.content).toBe(doc(["identity", "v1"], ["style", "terse"]));
      expect(messages.at(-1)).toEqual({ role: "system", content: '<section key="identity" supersedes="@2">\nv2\n</section>' });
    });
  });

  it("temporal coalesce: a second unsent update replaces the first, keeping one supersedes", () => {
    const { s, events } = sentStream();
    const first = s.section("identity", "v2");
    const second = s.section("identity", "v3");
    const state = given(...events, first, second).state;
    const tail = state.contextItems.filter((i) => i.kind === "section" && i.supersedes !== undefined);
    expect(tail).toEqual([{ kind: "section", offset: second.offset, key: "identity", supersedes: 2, payload: second.payload }]);
    expect(renderRequest(state).at(-1)?.content).toBe('<section key="identity" supersedes="@2">\nv3\n</section>');
  });

  it("after the superseding occurrence is sent, the next update supersedes it in turn", () => {
    const { s, events } = sentStream();
    const v2 = s.section("identity", "v2");
    const msg = s.user("again");
    const req = s.requested();
    const v3 = s.section("identity", "v3");
    const state = given(...events, v2, msg, req).when(v3).then(() => undefined).state;
    expect(renderRequest(state).at(-1)?.content).toBe(`<section key="identity" supersedes="@${v2.offset}">\nv3\n</section>`);
  });

  it("a developer-role section outside the document keeps its stored role", () => {
    const { s, events } = sentStream();
    const state = given(...events, s.section("notes", "remember X", "developer")).state;
    expect(renderRequest(state).at(-1)).toEqual({ role: "developer", content: '<section key="notes">\nremember X\n</section>' });
  });
});

describe("rewrites", () => {
  it("replace puts one occurrence at the key's first position and drops the later ones", () => {
    const { s, events } = sentStream();
    const v2 = s.section("identity", "v2");
    const rewrite = s.event("agents/context-rewritten", { op: "replace", key: "identity", content: "redacted" });
    given(...events, v2).when(rewrite).then(({ state }) => {
      const messages = renderRequest(state);
      expect(messages[1]?.content).toBe(doc(["identity", "redacted"], ["style", "terse"]));
      expect(messages.slice(1).some((m) => m.content.includes("supersedes"))).toBe(false);
      expect(state.pendingLlmRequestTrigger).toBeNull();
    });
  });

  it("replace of a key that never existed appends it at the tail as system", () => {
    const { s, events } = sentStream();
    const rewrite = s.event("agents/context-rewritten", { op: "replace", key: "new", content: "fresh" });
    given(...events).when(rewrite).then(({ state }) => {
      expect(renderRequest(state).at(-1)).toEqual({ role: "system", content: '<section key="new">\nfresh\n</section>' });
    });
  });

  it("delete K removes every occurrence; delete * empties the whole context", () => {
    const { s, events } = sentStream();
    const v2 = s.section("identity", "v2");
    given(...events, v2).when(s.event("agents/context-rewritten", { op: "delete", key: "identity" })).then(({ state }) => {
      expect(state.contextItems.some((i) => i.kind === "section" && i.key === "identity")).toBe(false);
      expect(renderRequest(state)[1]?.content).toBe(doc(["style", "terse"]));
    });
    given(...events, v2).when(s.event("agents/context-rewritten", { op: "delete", key: "*" })).then(({ state }) => {
      expect(state.contextItems).toEqual([]);
      expect(renderRequest(state)).toEqual([
        { role: "system", content: PROTOCOL_PROMPT },
        { role: "system", content: "" },
      ]);
    });
  });
});

describe("compaction", () => {
  it("cuts history off: document survives with newest content, then system items, summary, and what came after", () => {
    const s = new TestStream();
    const events = [s.created(), s.section("identity", "v1"), s.context({ role: "system", content: "unkeyed rule" })];
    events.push(s.user("old question"), s.requested(), s.assistant("old answer", 5), s.succeeded(5));
    events.push(s.section("identity", "v2"), s.user("newer question"), s.requested(), s.assistant("newer answer", 10));
    events.push(s.succeeded(10), s.user("after the cut"));
    const compaction = s.context({
      role: "developer",
      content: "[Earlier conversation history was compacted through @10 (~300000 tokens > 136000). Summary:]\n\nwe talked",
      compaction: { replacesHistoryThrough: 10 },
      llmRequestPolicy: { behaviour: "dont-trigger-request" },
    });
    given(...events).when(compaction).then(({ state, before }) => {
      expect(state.lastLlmRequestOffset).toBe(10);
      expect(state.pendingLlmRequestTrigger).toEqual(before.pendingLlmRequestTrigger);
      expect(renderRequest(state).slice(1)).toEqual([
        { role: "system", content: doc(["identity", "v2"]) },
        { role: "system", content: "@3\nunkeyed rule" },
        { role: "user", content: `@${compaction.offset}\n${compaction.payload.content}` },
        { role: "assistant", content: "newer answer" },
        { role: "user", content: "after the cut" },
      ]);
    });
  });

  it("a compaction item that does not precede itself is an ordinary message", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("q")];
    const odd = s.context({
      role: "developer",
      content: "summary",
      compaction: { replacesHistoryThrough: 99 },
      llmRequestPolicy: { behaviour: "dont-trigger-request" },
    });
    given(...events).when(odd).then(({ state }) => {
      expect(state.contextItems.map((i) => i.offset)).toEqual([2, 3]);
      expect(state.lastLlmRequestOffset).toBe(0);
    });
  });
});
