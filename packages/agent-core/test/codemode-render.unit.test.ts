// Given a settlement and how long it took, when it is rendered back to the model, then the
// text follows codemode.md "Rendering a settlement back" exactly.
import { describe, expect, it } from "vitest";
import {
  inferJsonType,
  planScriptResultRender,
  SCRIPT_FAILURE_HINT,
  type ScriptResultRenderInput,
  type ScriptResultRenderPlan,
  type ScriptSettlement,
  spillPath,
} from "../src/codemode/index.ts";

const base = { executionId: "agent-output:33", durationMs: 1800, settledOffset: 36, historyLimit: 30_000 } as const;
const plan = (settlement: ScriptSettlement, over: Partial<ScriptResultRenderInput> = {}) =>
  planScriptResultRender({ ...base, settlement, ...over });
const contentOf = (p: ScriptResultRenderPlan): string => {
  if (p.kind !== "inline") throw new Error(`expected inline, got ${p.kind}`);
  return p.event.payload.content;
};
const DATA_TRAILER = "This result is available to your next script as `results[0].data` (the preamble `results` array, newest first).";
const LOAD_TRAILER = "This result is available to your next script as `await results[0].load(itx)` (the preamble `results` array, newest first).";

describe("success", () => {
  it("scenario 1b: 7 after 1.8 s", () => {
    const p = plan({ status: "succeeded", result: 7 });
    expect(p).toEqual({
      kind: "inline",
      event: {
        type: "agents/context-added",
        payload: {
          role: "developer",
          content: `Your script returned (in 1.8s):\n\`\`\`json\n7\n\`\`\`\n${DATA_TRAILER}`,
          actor: { type: "script", executionId: "agent-output:33" },
          llmRequestPolicy: { behaviour: "after-current-request" },
        },
        idempotencyKey: "agent/render-script-result@36",
      },
    });
  });

  it("pretty-prints JSON with two-space indentation", () => {
    expect(contentOf(plan({ status: "succeeded", result: { open: [1, 2], ok: true } }, { durationMs: 250 }))).toBe(
      `Your script returned (in 250ms):\n\`\`\`json\n{\n  "open": [\n    1,\n    2\n  ],\n  "ok": true\n}\n\`\`\`\n${DATA_TRAILER}`,
    );
  });

  it("shows a string result raw in a plain fence", () => {
    expect(contentOf(plan({ status: "succeeded", result: 'He said "hi"\nbye' }))).toBe(
      `Your script returned (in 1.8s):\n\`\`\`\nHe said "hi"\nbye\n\`\`\`\n${DATA_TRAILER}`,
    );
  });

  it("lengthens the fence when the string itself holds a fence", () => {
    expect(contentOf(plan({ status: "succeeded", result: "a\n```\nb" }))).toBe(
      `Your script returned (in 1.8s):\n\`\`\`\`\na\n\`\`\`\nb\n\`\`\`\`\n${DATA_TRAILER}`,
    );
  });

  it("renders null (a value, unlike undefined)", () => {
    expect(contentOf(plan({ status: "succeeded", result: null }))).toContain("```json\nnull\n```");
  });

  it("appends nothing for an undefined result", () => {
    expect(plan({ status: "succeeded" })).toEqual({ kind: "nothing" });
  });

  it("switches to the load(itx) variant when the compact JSON is over 16 000 chars", () => {
    const justOver = "x".repeat(15_999); // JSON.stringify adds 2 quotes → 16 001
    const atLimit = "x".repeat(15_998); // → 16 000
    expect(contentOf(plan({ status: "succeeded", result: justOver })).endsWith(LOAD_TRAILER)).toBe(true);
    expect(contentOf(plan({ status: "succeeded", result: atLimit })).endsWith(DATA_TRAILER)).toBe(true);
  });
});

describe("failure", () => {
  it("a runtime failure may have partially executed", () => {
    const content = contentOf(
      plan(
        {
          status: "failed",
          error: "TypeError: x is undefined",
          failureKind: "runtime",
          phase: "execution",
          executionMayHaveOccurred: true,
          cancellation: "not-applicable",
        },
        { durationMs: 2500 },
      ),
    );
    expect(content).toBe(
      "Your script failed during execution (runtime, after 2.5s):\n```\nTypeError: x is undefined\n```\n" +
        `The script may have partially executed; inspect state before retrying.\n${SCRIPT_FAILURE_HINT}`,
    );
    expect(SCRIPT_FAILURE_HINT).toContain("itx.docs.typecheck");
    expect(SCRIPT_FAILURE_HINT).toContain("itx.docs.search");
  });

  it("a typecheck failure did not execute", () => {
    const content = contentOf(
      plan(
        {
          status: "failed",
          error: "Script was NOT executed: it does not typecheck.",
          failureKind: "typecheck",
          phase: "typecheck",
          executionMayHaveOccurred: false,
          cancellation: "not-applicable",
        },
        { durationMs: 40 },
      ),
    );
    expect(content.startsWith("Your script failed during typecheck (typecheck, after 40ms):\n```\nScript was NOT executed")).toBe(true);
    expect(content).toContain("\n```\nThe script did not execute.\n");
  });

  it("truncates an error longer than the history limit", () => {
    const error = "E".repeat(5000);
    const content = contentOf(
      plan(
        { status: "failed", error, failureKind: "runtime", phase: "execution", executionMayHaveOccurred: true, cancellation: "not-applicable" },
        { historyLimit: 1500 },
      ),
    );
    expect(content.length).toBeLessThanOrEqual(1500);
    expect(content).toContain("… truncated (5000 chars of error in total)");
    expect(content.endsWith(SCRIPT_FAILURE_HINT)).toBe(true);
  });
});

describe("spill of a result longer than the history limit", () => {
  const pulls = Array.from({ length: 300 }, (_, i) => ({ number: i, title: `Pull ${i} ${"t".repeat(300)}`, draft: i % 2 === 0 ? true : undefined }));
  const p = plan({ status: "succeeded", result: pulls }, { executionId: "agent-output:33/x y", historyLimit: 4000 });

  it("plans the file: path sanitised, full pretty JSON as content", () => {
    expect(p.kind).toBe("spill");
    if (p.kind !== "spill") return;
    expect(p.path).toBe("script-results/agent-output-33-x-y.json");
    expect(p.contentType).toBe("application/json");
    expect(p.fileContent).toBe(JSON.stringify(pulls, null, 2));
    expect(p.eventIfWritten.idempotencyKey).toBe("agent/render-script-result@36");
    expect(p.eventIfWriteFailed.idempotencyKey).toBe("agent/render-script-result@36");
  });

  it("when written: size, inferred type, elided preview, loader recipe and saved path, within the limit", () => {
    if (p.kind !== "spill") throw new Error("expected spill");
    const content = p.eventIfWritten.payload.content;
    expect(content.length).toBeLessThanOrEqual(4000);
    expect(content).toContain(`a result too large to show inline: ${JSON.stringify(pulls, null, 2).length} chars (up to 4000 render inline)`);
    expect(content).toContain("`script-results/agent-output-33-x-y.json`");
    expect(content).toContain("type Result = {\n  number: number;\n  title: string;\n  draft?: boolean;\n}[];");
    expect(content).toContain("more items (300 in total)");
    expect(content).toContain("… (");
    expect(content).toContain("`await results[0].load(itx)`");
    expect(content).toContain('`JSON.parse(await itx.files.get("script-results/agent-output-33-x-y.json").text())`');
    expect(p.eventIfWritten.payload.actor).toEqual({ type: "script", executionId: "agent-output:33/x y" });
  });

  it("when the write failed: truncated inline with the documented note, within the limit", () => {
    if (p.kind !== "spill") throw new Error("expected spill");
    const content = p.eventIfWriteFailed.payload.content;
    const total = JSON.stringify(pulls, null, 2).length;
    expect(content.length).toBe(4000);
    expect(content.startsWith("Your script returned (in 1.8s):\n```json\n[\n  {\n")).toBe(true);
    expect(content).toContain(`\n… truncated (${total} chars total; up to 4000 render inline — return less: slice arrays, pick fields)\n\`\`\`\n`);
    expect(content.endsWith(LOAD_TRAILER)).toBe(true);
  });

  it("spills a long string to a .txt file", () => {
    const text = plan({ status: "succeeded", result: "line\n".repeat(2000) }, { historyLimit: 1000 });
    expect(text.kind === "spill" && text.path).toBe("script-results/agent-output-33.txt");
    expect(spillPath("slash-command:/deploy now", true)).toBe("script-results/slash-command-deploy-now.txt");
  });
});

describe("a result the host omitted from the settlement", () => {
  it("renders its size, type and preview with the loader", () => {
    const content = contentOf(
      plan({ status: "succeeded", oversized: { kind: "omitted", serializedChars: 2_000_000, preview: "[1, 2, …]", typeText: "number[]" } }),
    );
    expect(content).toBe(
      "Your script returned (in 1.8s) a result too large to keep in its settlement: 2000000 chars.\n" +
        "Its type:\n```ts\ntype Result = number[];\n```\nPreview:\n```json\n[1, 2, …]\n```\n" +
        "Load it in your next script with `await results[0].load(itx)` (the preamble `results` array, newest first). " +
        "Work on it inside the script and return only what you need (slice arrays, pick fields).",
    );
  });
});

describe("inferJsonType", () => {
  it.each([
    [7, "number"],
    ["s", "string"],
    [null, "null"],
    [true, "boolean"],
    [[], "unknown[]"],
    [[1, "a", 2], "(number | string)[]"],
    [[[1], [2, 3]], "number[][]"],
    [{}, "{}"],
    [{ "a-b": 1, ok: [true] }, '{\n  "a-b": number;\n  ok: boolean[];\n}'],
    [[{ a: 1 }, { a: null, b: "x" }], "{\n  a: number | null;\n  b?: string;\n}[]"],
  ])("%j → %s", (value, type) => {
    expect(inferJsonType(value)).toBe(type);
  });
});
