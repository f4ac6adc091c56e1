// Given preamble events and prior settlements, when the host's prelude is built, then entries
// keep their first position, and `results` is valid TypeScript that types each result.
import type { AgentEvent } from "@agentrt/contract";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import {
  applyPreambleEvent,
  buildPreambleSource,
  buildResultsPreamble,
  buildScriptPrelude,
  type PreambleEntry,
  type SettledScriptResult,
  wrapScriptBody,
} from "../src/codemode/index.ts";

let offset = 0;
const ev = (type: string, payload: unknown): AgentEvent =>
  ({ streamPath: "/agents/web/demo", offset: ++offset, createdAt: "2026-08-24T16:51:00.000Z", type, payload }) as AgentEvent;
const fold = (events: AgentEvent[]) => events.reduce<readonly PreambleEntry[]>((acc, e) => applyPreambleEvent(acc, e), []);

describe("applyPreambleEvent", () => {
  it("upserts, keeping an entry's first position on re-set", () => {
    const entries = fold([
      ev("capability-host/preamble-set", { key: "a", code: "const A = 1;" }),
      ev("capability-host/preamble-set", { key: "b", code: "const B = 2;" }),
      ev("capability-host/preamble-set", { key: "a", code: "const A = 3;" }),
    ]);
    expect(entries).toEqual([
      { key: "a", code: "const A = 3;" },
      { key: "b", code: "const B = 2;" },
    ]);
  });

  it("removes by key; an unknown key is a no-op (same array back)", () => {
    const entries = fold([ev("capability-host/preamble-set", { key: "a", code: "x" }), ev("capability-host/preamble-set", { key: "b", code: "y" })]);
    expect(applyPreambleEvent(entries, ev("capability-host/preamble-removed", { key: "a" }))).toEqual([{ key: "b", code: "y" }]);
    expect(applyPreambleEvent(entries, ev("capability-host/preamble-removed", { key: "zzz" }))).toBe(entries);
    expect(applyPreambleEvent(entries, ev("agent/created", {}))).toBe(entries);
  });

  it("a removed and re-set key goes to the end", () => {
    const entries = fold([
      ev("capability-host/preamble-set", { key: "a", code: "1" }),
      ev("capability-host/preamble-set", { key: "b", code: "2" }),
      ev("capability-host/preamble-removed", { key: "a" }),
      ev("capability-host/preamble-set", { key: "a", code: "3" }),
    ]);
    expect(entries.map((e) => e.key)).toEqual(["b", "a"]);
  });

  it("renders the source in order, each entry under its key", () => {
    expect(buildPreambleSource([{ key: "a", code: "const A = 1;" }, { key: "b", code: "const B = 2;" }])).toBe(
      '// preamble entry "a"\nconst A = 1;\n\n// preamble entry "b"\nconst B = 2;',
    );
  });

  it("given a key holding a line separator, when rendered, then the key stays inside its comment and never runs", () => {
    const source = buildPreambleSource([{ key: "notes\u2028const HIDDEN = 'ran from the key';//\u2029x", code: "" }]);
    expect(source).toBe('// preamble entry "notes\\u2028const HIDDEN = \'ran from the key\';//\\u2029x"\n');
    // Evaluated as script text, the comment declares nothing
    expect(new Function(`${source}\nreturn typeof HIDDEN;`)()).toBe("undefined");
  });
});

const ok = (executionId: string, result?: unknown): SettledScriptResult => ({
  executionId,
  settlement: result === undefined ? { status: "succeeded" } : { status: "succeeded", result },
});

describe("buildResultsPreamble", () => {
  it("inlines small results as data, newest first", () => {
    expect(buildResultsPreamble([ok("agent-output:33", 7), ok("agent-output:20", { a: [1] })])).toBe(
      "type ScriptResultsItx = { capabilityHost: { getScriptResult(executionId: string): Promise<unknown> } };\n" +
        "/** Your latest script results, newest first: `results[0]` is the last one. */\n" +
        "const results = [\n" +
        '  { executionId: "agent-output:33", status: "succeeded", data: 7 },\n' +
        '  { executionId: "agent-output:20", status: "succeeded", data: {"a":[1]} },\n' +
        "] as const;",
    );
  });

  it("keeps at most 20", () => {
    const many = Array.from({ length: 25 }, (_, i) => ok(`agent-output:${i}`, i));
    const source = buildResultsPreamble(many);
    expect(source).toContain('"agent-output:19"');
    expect(source).not.toContain('"agent-output:20"');
  });

  it("types a large result and loads it through the host", () => {
    const big = Array.from({ length: 2000 }, (_, i) => ({ id: i, title: `pull ${i}` }));
    const source = buildResultsPreamble([ok("agent-output:9", big)]);
    expect(source).toContain(
      '{ executionId: "agent-output:9", status: "succeeded", load: async (itx: ScriptResultsItx): Promise<{\n    id: number;\n    title: string;\n  }[]> => (((await itx.capabilityHost.getScriptResult("agent-output:9")) as { result?: unknown } | null)?.result) as {',
    );
    expect(source).not.toContain("pull 1999");
  });

  it("shows failures as their error text, cut at 2000 chars", () => {
    const source = buildResultsPreamble([
      {
        executionId: "agent-output:5",
        settlement: { status: "failed", error: "x".repeat(3000), failureKind: "runtime", phase: "execution", executionMayHaveOccurred: true, cancellation: "not-applicable" },
      },
    ]);
    expect(source).toContain(`failureKind: "runtime", error: "${"x".repeat(1999)}…" }`);
  });

  it("does not let a __proto__ key set the prototype", () => {
    expect(buildResultsPreamble([ok("e", { __proto__x: 1, ["__proto__"]: 2 })])).toContain('data: JSON.parse("{\\"__proto__x\\":1,\\"__proto__\\":2}")');
  });
});

const options: ts.CompilerOptions = { strict: true, target: ts.ScriptTarget.ES2022, lib: ["lib.es2022.d.ts"], noEmit: true, types: [] };
const libCache = new Map<string, ts.SourceFile | undefined>();

/** Type-checks `source` with the real compiler; returns the diagnostics' messages. */
function typecheck(source: string): string[] {
  const host = ts.createCompilerHost(options);
  const original = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version) => {
    if (name === "script.ts") return ts.createSourceFile(name, source, version);
    if (!libCache.has(name)) libCache.set(name, original(name, version));
    return libCache.get(name);
  };
  const program = ts.createProgram(["script.ts"], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
}

describe("the prelude as TypeScript", { timeout: 60_000 }, () => {
  it("typechecks with a script that reads data, loads a large result and reads an error", () => {
    const big = Array.from({ length: 2000 }, (_, i) => ({ id: i, title: `pull ${i}`, merged: i % 2 === 0 ? true : undefined }));
    const prelude = buildScriptPrelude(
      [{ key: "consts", code: "const OWNER = 'acme';" }],
      [
        ok("agent-output:33", 7),
        ok("agent-output:20", big),
        {
          executionId: "agent-output:5",
          settlement: { status: "failed", error: "boom", failureKind: "runtime", phase: "execution", executionMayHaveOccurred: true, cancellation: "not-applicable" },
        },
        ok("agent-output:4"),
      ],
    );
    const script = wrapScriptBody(
      [
        "const n: number = results[0].data;",
        "const pulls = await results[1].load(itx);",
        "const first: number = pulls[0]!.id;",
        "const merged: boolean | undefined = pulls[0]!.merged;",
        "const err: string = results[2].error;",
        "return [n, first, merged, err, OWNER];",
      ].join("\n"),
    );
    // The host's own itx (its getScriptResult resolves to the settlement) must satisfy the loader.
    const hostItx =
      "interface HostItx { capabilityHost: { getScriptResult(executionId: string): Promise<" +
      '{ status: "succeeded"; result?: unknown } | { status: "failed"; error: string } | null> } }\n';
    const source = `${prelude.source}${hostItx}export const run: (itx: HostItx) => Promise<unknown> = ${script};\n`;
    expect(typecheck(source)).toEqual([]);
    expect(prelude.lineCount).toBe(prelude.source.split("\n").length - 1);
  });

  it("a wrong use of a result is a type error (the check can fail)", () => {
    const prelude = buildScriptPrelude([], [ok("agent-output:33", 7)]);
    const diagnostics = typecheck(`${prelude.source}export const s: string = results[0].data;\n`);
    expect(diagnostics.join("\n")).toMatch(/not assignable to type 'string'/);
  });
});
