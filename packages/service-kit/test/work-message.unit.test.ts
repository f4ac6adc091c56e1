// What a delivered work message is to a consumer (issue 16's soak): an item of the other kind —
// which nats-server 2.9 delivered to consumers outside their filter after node restarts — is
// "foreign" (put back, never deleted), a body that breaks our schema on our own subject is
// "malformed", and only our own well-formed item is handled.

import { describe, expect, it } from "vitest";
import { classifyWorkMessage } from "../src/index.ts";

const llmItem = JSON.stringify({ streamPath: "/agents/a", requestOffset: 7 });
const scriptItem = JSON.stringify({ streamPath: "/agents/a", requestedOffset: 9, executionId: "agent-output:9" });

describe("a delivered work message", () => {
  it("is foreign when its subject is another kind's, whatever its body", () => {
    // Given an LLM item delivered to the capability host's script consumer
    // Then it is the drivers' item, not a malformed script item to be deleted
    expect(classifyWorkMessage("script", "work.llm.3", llmItem)).toEqual({ type: "foreign" });
    expect(classifyWorkMessage("llm", "work.script.0", scriptItem)).toEqual({ type: "foreign" });
    expect(classifyWorkMessage("llm", "work.llmx.0", llmItem)).toEqual({ type: "foreign" });
  });

  it("is malformed only on its own subject with a body that breaks the schema", () => {
    expect(classifyWorkMessage("script", "work.script.1", llmItem)).toEqual({ type: "malformed" });
    expect(classifyWorkMessage("llm", "work.llm.1", "not json")).toEqual({ type: "malformed" });
  });

  it("is the item when subject and body are its own", () => {
    expect(classifyWorkMessage("llm", "work.llm.3", llmItem)).toEqual({ type: "item", item: { streamPath: "/agents/a", requestOffset: 7 } });
    expect(classifyWorkMessage("script", "work.script.0", scriptItem)).toMatchObject({ type: "item", item: { executionId: "agent-output:9" } });
  });
});
