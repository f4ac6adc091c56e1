// Given whether a stream is born, when a batch is appended through the API, then user input
// that would land before any birth is named (the gateway refuses it with 404), and nothing
// else is held back.

import { describe, expect, it } from "vitest";
import type { EventInput } from "@agentrt/contract";
import { firstUnbornUserInput, noAgentMessage } from "../src/index.ts";
import { userMessage } from "@agentrt/testing";

const born: EventInput = { type: "agent/created", payload: {} };

describe("user input needs a birth", () => {
  it("given an unborn stream, when a user message is sent, then it is refused at its index", () => {
    expect(firstUnbornUserInput([userMessage("hi")], false)).toBe(0);
    expect(firstUnbornUserInput([{ type: "agent/configured", payload: { config: {} } }, userMessage("hi")], false)).toBe(1);
  });

  it("given an unborn stream, when the batch brings its birth first, then it is accepted", () => {
    expect(firstUnbornUserInput([born, userMessage("a"), userMessage("b")], false)).toBeNull();
  });

  it("given an unborn stream, when the birth comes after the message, then the message is refused", () => {
    expect(firstUnbornUserInput([userMessage("early"), born], false)).toBe(0);
  });

  it("given a born stream, any user input is accepted", () => {
    expect(firstUnbornUserInput([userMessage("hi")], true)).toBeNull();
  });

  it("events that are not user input are never held (other roles and other writers)", () => {
    const others: EventInput[] = [
      { type: "agents/context-added", payload: { role: "developer", content: "note" } },
      { type: "agents/context-added", payload: { role: "assistant", content: "reply" } },
      { type: "agent/paused", payload: {} },
    ];
    expect(firstUnbornUserInput(others, false)).toBeNull();
  });

  it("says what is missing and how to fix it", () => {
    expect(noAgentMessage("/agents/web/x")).toBe("no agent at /agents/web/x; create it with `agents create /agents/web/x`");
  });
});
