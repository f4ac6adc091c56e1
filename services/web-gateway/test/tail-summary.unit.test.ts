// Given settled requests, when `agents tail` prints them, then a reply cut short says how (the
// core's note, the words the web UI shows), and a finished one says nothing more.

import { describe, expect, it } from "vitest";
import { summarise } from "../src/cli/commands/tail.ts";

const settled = (result: unknown) => ({ streamPath: "/agents/a", offset: 9, type: "agent/llm-request-settled", payload: { requestOffset: 8, durationMs: 1_500, result }, createdAt: "2026-01-01T00:00:00.000Z" });

describe("agents tail: a settled request", () => {
  it("given a reply cut at the output limit, then the line says so", () => {
    expect(summarise(settled({ status: "succeeded", text: "It be", rawResponse: { finishReason: "length" } }))).toBe(
      "request @8 succeeded in 1.5s (cut short: the model reached its output token limit (finish_reason length))",
    );
  });

  it("given a finished reply, then the line is the status and duration only", () => {
    expect(summarise(settled({ status: "succeeded", text: "All" }))).toBe("request @8 succeeded in 1.5s");
  });
});
