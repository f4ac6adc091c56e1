// Given what the stream holds (raw provider chunks, a model reply, the folded state), when the
// UI or the CLI shows it, then they show it through the one display module the same way.

import { describe, expect, it } from "vitest";
import { given } from "./support/given.ts";
import { TestStream } from "./support/stream.ts";
import { agentTitle, chunkText, chunksText, cutShortNote, oneLine, replyProse, revealBidiControls, titleFromMessage } from "../src/display/index.ts";

describe("chunk text", () => {
  it("reads Chat Completions deltas and Responses API text deltas; ignores the rest", () => {
    const chunks = [
      { choices: [{ delta: { content: "Four" } }] },
      { type: "response.output_text.delta", delta: " it" },
      { choices: [{ delta: {} }] },
      { type: "response.created" },
      null,
      "junk",
      { choices: [{ delta: { content: " is." }, finish_reason: "stop" }] },
    ];
    expect(chunksText(chunks)).toBe("Four it is.");
  });

  it("says when a chunk ends the stream", () => {
    expect(chunkText({ choices: [{ delta: { content: "x" }, finish_reason: "stop" }] })).toEqual({ text: "x", done: true });
    expect(chunkText({ choices: [{ delta: { content: "x" }, finish_reason: null }] })).toEqual({ text: "x", done: false });
    expect(chunkText({ type: "response.completed" })).toEqual({ text: "", done: true });
  });
});

describe("reply prose", () => {
  it("a reply whose script ran shows only its prose (fenced and tag dialects)", () => {
    expect(replyProse("Let me count.\n\n```ts\nasync (itx) => 1\n```\n\nDone soon.")).toBe("Let me count.\n\nDone soon.");
    expect(replyProse('Counting.\n<codemode status="Counting">\nasync (itx) => 1\n</codemode>')).toBe("Counting.");
  });

  it("a reply with no script, or whose block did not run, shows in full", () => {
    expect(replyProse("  Just prose.  ")).toBe("Just prose.");
    const two = "a\n```ts\nasync () => 1\n```\nb\n```ts\nasync () => 2\n```";
    expect(replyProse(two)).toBe(two);
    const notAsync = "x\n```ts\nreturn 1\n```";
    expect(replyProse(notAsync)).toBe(notAsync);
    expect(replyProse("```json\n{}\n```")).toBe("```json\n{}\n```");
  });

  it("oneLine collapses whitespace and cuts with an ellipsis", () => {
    expect(oneLine("  a\n b\t c ", 10)).toBe("a b c");
    expect(oneLine("abcdefghijkl", 5)).toBe("abcd…");
  });
});

describe("agent titles", () => {
  it("the summary's title wins", () => {
    const s = new TestStream();
    const g = given(s.created(), s.user("how many open PRs?"), s.event("agent/summary-updated", { title: "PR counter" }));
    expect(agentTitle(g.state)).toBe("PR counter");
  });

  it("else the first user message, on one line and bounded", () => {
    const s = new TestStream();
    const long = `\n  How many open pull requests do we have across ${"every repository ".repeat(5)}?\nThanks`;
    const g = given(s.created(), s.context({ role: "system", content: "You are helpful." }), s.user(long), s.user("second"));
    const title = agentTitle(g.state);
    expect(title).toMatch(/^How many open pull requests do we have across every/);
    expect(title!.length).toBe(60);
    expect(title!.endsWith("…")).toBe(true);
  });

  it("else null (an agent nobody has talked to yet)", () => {
    const s = new TestStream();
    expect(agentTitle(given(s.created()).state)).toBeNull();
    expect(titleFromMessage(" \n \n")).toBeNull();
  });
});

describe("revealBidiControls", () => {
  it("given text with bidirectional embeddings, overrides and isolates, when shown, then each is its \\u escape and the rest is unchanged", () => {
    expect(revealBidiControls("a\u202ab\u202ec\u2066d\u2069e")).toBe("a\\u202ab\\u202ec\\u2066d\\u2069e");
    expect(revealBidiControls("plain 中文 \u200f right-to-left mark kept")).toBe("plain 中文 \u200f right-to-left mark kept");
  });
});

describe("how a reply ended", () => {
  const settled = (rawResponse?: unknown) => ({ status: "succeeded", text: "t", ...(rawResponse === undefined ? {} : { rawResponse }) });

  it("given a reply cut at the output limit or by a content filter, then the note says which", () => {
    expect(cutShortNote(settled({ finishReason: "length" }))).toBe("cut short: the model reached its output token limit (finish_reason length)");
    expect(cutShortNote(settled({ finishReason: "content_filter" }))).toBe("cut short by the provider's content filter (finish_reason content_filter)");
    expect(cutShortNote(settled({ finishReason: "max_output_tokens" }))).toBe("cut short: the model reached its output token limit (response incomplete: max_output_tokens)");
  });

  it("given a reply ending in tool calls, then the note says they were not kept", () => {
    expect(cutShortNote(settled({ finishReason: "tool_calls" }))).toBe("the model asked for tool calls, which this runtime does not offer; their arguments are not kept (finish_reason tool_calls)");
  });

  it("given another short reason, then it is named; a long or odd one is not repeated", () => {
    expect(cutShortNote(settled({ finishReason: "unrecognised" }))).toBe("the model stopped with finish_reason unrecognised");
    expect(cutShortNote(settled({ finishReason: "x".repeat(65) }))).toBeUndefined();
    expect(cutShortNote(settled({ finishReason: "a\u202eb" }))).toBeUndefined();
  });

  it("given a finished reply, no raw response, or not a result, then there is no note", () => {
    expect(cutShortNote(settled({ finishReason: "stop" }))).toBeUndefined();
    expect(cutShortNote(settled())).toBeUndefined();
    expect(cutShortNote(settled("length"))).toBeUndefined();
    expect(cutShortNote(null)).toBeUndefined();
    expect(cutShortNote({ status: "failed", errorMessage: "x" })).toBeUndefined();
  });
});
