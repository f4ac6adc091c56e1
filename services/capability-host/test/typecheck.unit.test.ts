// Given a script and its scope, when the warm checker runs, then only PROVABLE errors block
// (codemode.md "Typecheck"): syntax, "Cannot find name … Did you mean", "Property … Did you
// mean" except on the root `itx`; preamble errors, unknown namespaces and arity run unchecked;
// a check over its budget is `timed-out` (the script does not run).

import { beforeAll, describe, expect, it } from "vitest";
import { loadItxDeclarations, ScriptChecker, type ScriptSourceParts } from "../src/index.ts";
import { scopeAt } from "../src/scope.ts";
import { typecheckErrorText } from "../src/settlements.ts";

let checker: ScriptChecker;
beforeAll(() => {
  checker = new ScriptChecker(loadItxDeclarations());
  checker.check(parts("return 1;"), 60_000); // cold start
}, 60_000);

function parts(code: string, preamble = ""): ScriptSourceParts {
  return { preamble, resultsPreamble: "const results = [] as const;", code, wrapped: `async (itx) => {\n${code}\n}` };
}
const check = (code: string, preamble = "") => checker.check(parts(code, preamble), 30_000);

describe("a check over its budget", () => {
  it("is timed-out, naming the budget (the host settles the script typecheck, not run)", () => {
    expect(checker.check(parts("return 2;"), 0)).toMatchObject({ kind: "timed-out", budgetMs: 0 });
  });
});

describe("provable errors block", () => {
  it("a typo on a known namespace member (TS2551) blocks with Did you mean", () => {
    expect(check('await itx.chat.sendMesage("hi");')).toMatchObject({
      kind: "blocked",
      problems: ["Line 1, column 16: error TS2551: Property 'sendMesage' does not exist on type 'ItxChat'. Did you mean 'sendMessage'?"],
    });
  });

  it("an unknown name with a suggestion (TS2552) blocks", () => {
    const outcome = check("const pullCount = 3;\nreturn pullCoutn;");
    expect(outcome).toMatchObject({ kind: "blocked" });
    if (outcome.kind === "blocked") expect(outcome.problems[0]).toBe("Line 2, column 8: error TS2552: Cannot find name 'pullCoutn'. Did you mean 'pullCount'?");
  });

  it("a syntax error (TS1xxx) blocks", () => {
    const outcome = check("return (1 + ;");
    expect(outcome.kind).toBe("blocked");
    if (outcome.kind === "blocked") expect(outcome.problems[0]).toMatch(/error TS1\d{3}:/);
  });

  it("the blocked settlement text is codemode.md's", () => {
    expect(typecheckErrorText(["P1", "P2"])).toBe(
      "Script was NOT executed: it does not typecheck against this scope's capability types.\nP1\nP2\nFix the type errors and resend the whole corrected script.",
    );
  });
});

describe("uncertain errors run unchecked", () => {
  it("an unknown root namespace (providers extend itx at run time)", () => {
    expect(check("return await itx.unknownNs.anything(1, 2);").kind).toBe("ok");
  });

  it("a near-miss on the root itx is not blocked (it may be a provider namespace)", () => {
    expect(check("return await itx.chats.send(1);").kind).toBe("ok");
  });

  it("an arity or type mismatch", () => {
    expect(check("await itx.chat.sendMessage(1, 2);").kind).toBe("ok");
  });

  it("errors located in preamble lines", () => {
    expect(check("return helper();", "const helper = () => 1;\nconst broken: number = 'x';\nconst typo = itx.chat.sendMesage;").kind).toBe("ok");
  });

  it("provider declarations make a provider typo provable, and removing them makes it unchecked again", () => {
    checker.setProviderDeclarations(new Map([["repo", "interface Itx { repo: { listPulls(a: { state: string }): Promise<unknown[]> } }"]]));
    const outcome = check('return itx.repo.listPuls({ state: "open" });');
    expect(outcome.kind === "blocked" && outcome.problems[0]).toContain("Did you mean 'listPulls'?");
    checker.setProviderDeclarations(new Map());
    expect(check('return itx.repo.listPuls({ state: "open" });').kind).toBe("ok");
  });
});

describe("scope", () => {
  const at = (offset: number, type: string, payload: unknown) =>
    ({ streamPath: "/agents/a", offset, createdAt: "2026-01-01T00:00:00.000Z", type, payload }) as never;

  it("folds preamble set/re-set/remove in first-position order, before the request only, and results newest first", () => {
    const scope = scopeAt(
      [
        at(1, "capability-host/preamble-set", { key: "a", code: "const A = 1;" }),
        at(2, "capability-host/preamble-set", { key: "b", code: "const B = 2;" }),
        at(3, "capability-host/preamble-set", { key: "a", code: "const A = 3;" }),
        at(4, "capability-host/script-run-settled", { executionId: "x1", settlement: { status: "succeeded", result: 1 } }),
        at(5, "capability-host/script-run-settled", { executionId: "x2", settlement: { status: "succeeded", result: 2 } }),
        at(6, "capability-host/preamble-removed", { key: "b" }),
        at(7, "capability-host/preamble-set", { key: "late", code: "const LATE = 1;" }),
      ],
      7,
    );
    expect(scope.preamble).toContain("const A = 3;");
    expect(scope.preamble).not.toContain("const B");
    expect(scope.preamble).not.toContain("LATE");
    expect(scope.resultsPreamble.indexOf('"x2"')).toBeLessThan(scope.resultsPreamble.indexOf('"x1"'));
  });
});
