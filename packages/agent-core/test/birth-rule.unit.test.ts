// Given whether a stream is born, when a batch is appended through the API, then user input,
// another agent's message or a script request that would land before any birth is named (the
// gateway refuses it with 404, the capability host the script's call), and nothing else is held back.

import { describe, expect, it } from "vitest";
import type { EventInput } from "@agentrt/contract";
import { firstUnbornInput, noAgentMessage } from "../src/index.ts";
import { userMessage } from "@agentrt/testing";

const born: EventInput = { type: "agent/created", payload: {} };

describe("user input needs a birth", () => {
  it("given an unborn stream, when a user message is sent, then it is refused at its index", () => {
    expect(firstUnbornInput([userMessage("hi")], false)).toBe(0);
    expect(firstUnbornInput([{ type: "agent/configured", payload: { config: {} } }, userMessage("hi")], false)).toBe(1);
  });

  it("given an unborn stream, when the batch brings its birth first, then it is accepted", () => {
    expect(firstUnbornInput([born, userMessage("a"), userMessage("b")], false)).toBeNull();
  });

  it("given an unborn stream, when the birth comes after the message, then the message is refused", () => {
    expect(firstUnbornInput([userMessage("early"), born], false)).toBe(0);
  });

  it("given a born stream, any user input is accepted", () => {
    expect(firstUnbornInput([userMessage("hi")], true)).toBeNull();
  });

  it("given an unborn stream, when a script is requested, then it is refused at its index (it would run with no agent's grant)", () => {
    const script: EventInput = { type: "capability-host/script-run-requested", payload: { code: "return 1;", executionId: "x", expiresAt: "2026-12-06T00:00:00.000Z" } };
    expect(firstUnbornInput([script], false)).toBe(0);
    expect(firstUnbornInput([born, script], false)).toBeNull();
    expect(firstUnbornInput([script], true)).toBeNull();
  });

  it("holds another agent's message (itx.agents.get(p).message()) like user input: it too would be an unborn stream's first event", () => {
    const message: EventInput = { type: "agents/context-added", payload: { role: "developer", content: "hi", actor: { type: "agent", path: "/agents/web/a" } } };
    expect(firstUnbornInput([message], false)).toBe(0);
    expect(firstUnbornInput([born, message], false)).toBeNull();
    expect(firstUnbornInput([message], true)).toBeNull();
    // An operator's steering (another actor) is not held
    expect(firstUnbornInput([{ type: "agents/context-added", payload: { role: "developer", content: "note", actor: { type: "integration", name: "ops" } } }], false)).toBeNull();
  });

  it("events that are not user input or script requests are never held (other roles and other writers)", () => {
    const others: EventInput[] = [
      { type: "agents/context-added", payload: { role: "developer", content: "note" } },
      { type: "agents/context-added", payload: { role: "assistant", content: "reply" } },
      { type: "agent/paused", payload: {} },
    ];
    expect(firstUnbornInput(others, false)).toBeNull();
  });

  it("says what is missing and how to fix it", () => {
    expect(noAgentMessage("/agents/web/x")).toBe("no agent at /agents/web/x; create it with `agents create /agents/web/x`");
  });
});
