// itx.docs.typecheck for one script (itx/docs-typecheck.ts): its checks run one at a time, its
// code is held to the scripts' source limit, and after a check that did not finish it may ask no
// more: two scripts asking about pathological types eight at a time held other agents' scripts in
// the checker queue until their deadlines.

import { describe, expect, it } from "vitest";
import type { CheckedScript } from "../src/index.ts";
import { ScriptDocsTypecheck } from "../src/itx/docs-typecheck.ts";

function fakeCheck(outcomes: Record<string, CheckedScript>) {
  let running = 0;
  let most = 0;
  const seen: string[] = [];
  const check = async (code: string): Promise<CheckedScript> => {
    running++;
    most = Math.max(most, running);
    seen.push(code);
    await new Promise((r) => setTimeout(r, 10));
    running--;
    return outcomes[code] ?? { kind: "ok", durationMs: 1 };
  };
  return { check, seen, most: () => most };
}

describe("a script's itx.docs.typecheck", () => {
  it("given eight checks at once, when asked, then they run one at a time in the order asked", async () => {
    const fake = fakeCheck({});
    const docs = new ScriptDocsTypecheck(fake.check, 64 * 1024);
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => docs.typecheck(`return ${i};`)));
    expect(answers.every((a) => a.ok)).toBe(true);
    expect(fake.most()).toBe(1);
    expect(fake.seen).toEqual(Array.from({ length: 8 }, (_, i) => `return ${i};`));
  });

  it("given code past the source limit, when asked, then it is refused naming the limit and never checked", async () => {
    const fake = fakeCheck({});
    const docs = new ScriptDocsTypecheck(fake.check, 100);
    await expect(docs.typecheck("x".repeat(101))).rejects.toThrow("itx.docs.typecheck: the code is 101 bytes, over the 100 a script may be (SCRIPT_MAX_SOURCE_BYTES)");
    expect(fake.seen).toEqual([]);
  });

  it("given a check that did not finish, when asked again, then the script is told it may ask no more, and queued checks are refused too", async () => {
    const fake = fakeCheck({ bomb: { kind: "timed-out", budgetMs: 2_000, durationMs: 2_000 } });
    const docs = new ScriptDocsTypecheck(fake.check, 64 * 1024);
    const [bomb, after] = await Promise.allSettled([docs.typecheck("bomb"), docs.typecheck("return 1;")]);
    expect(bomb).toEqual({ status: "fulfilled", value: { ok: false, problems: ["the checker did not finish within 2000 ms; simplify the types"] } });
    expect(after.status === "rejected" && String(after.reason)).toContain("this script's earlier check did not finish (not within 2000 ms); it may ask no more");
    await expect(docs.typecheck("return 2;")).rejects.toThrow(/may ask no more/);
    expect(fake.seen).toEqual(["bomb"]);
  });
});
