// Given a model reply, when it is parsed in either dialect, then exactly the rules of
// codemode.md "Two reply dialects" hold.
import { describe, expect, it } from "vitest";
import { isAsyncFunctionSource, parseFencedReply, parseTagReply, wrapScriptBody } from "../src/codemode/index.ts";
import { fenceOpener } from "../src/codemode/fenced.ts";

const fence = "```";


/**
 * How a parse's time grows when its input grows four times, best of five runs at each size, in
 * the same run (so a busy machine slows both sides): about 4 when linear, 16 when quadratic, far
 * more for the backtracking these inputs once caused. Absolute bounds failed on a loaded CI
 * machine (209 ms against 200) without anything being wrong.
 */
function growthFrom1To4(parse: (scale: 1 | 4) => unknown): number {
  const best = (scale: 1 | 4) => {
    let fastest = Number.POSITIVE_INFINITY;
    for (let run = 0; run < 5; run++) {
      const started = performance.now();
      parse(scale);
      fastest = Math.min(fastest, performance.now() - started);
    }
    return fastest;
  };
  best(1);
  return best(4) / Math.max(best(1), 0.5);
}
/** Past this growth from 1× to 4× an input, a parse is not linear (4 expected, 16 when quadratic). */
const LINEAR_GROWTH_BOUND = 9;

describe("parseFencedReply", () => {
  it("extracts ONE ts block whose body starts with async, with the prose around it", () => {
    const reply = `Let me look.\n${fence}ts\nasync (itx) => {\n  return 1;\n}\n${fence}\nBack soon.`;
    expect(parseFencedReply(reply)).toEqual({
      kind: "script",
      code: "async (itx) => {\n  return 1;\n}",
      prose: "Let me look.\n\nBack soon.",
    });
  });

  it("accepts typescript as the language and reads a status from the info string", () => {
    const reply = `${fence}typescript status="Counting PRs"\nasync function main(itx) { return 2; }\n${fence}`;
    expect(parseFencedReply(reply)).toEqual({
      kind: "script",
      code: "async function main(itx) { return 2; }",
      status: "Counting PRs",
      prose: "",
    });
  });

  it("rejects more than one fence at line start, counting them, and runs nothing", () => {
    const reply = `a\n${fence}ts\nasync () => 1\n${fence}\nb\n${fence}ts\nasync () => 2\n${fence}\nc\n${fence}json\n{}\n${fence}`;
    const parsed = parseFencedReply(reply);
    expect(parsed.kind).toBe("rejected");
    if (parsed.kind !== "rejected") return;
    expect(parsed.reason).toBe("multiple");
    expect(parsed.count).toBe(3);
    expect(parsed.feedback.startsWith("Your response contained 3 fenced code blocks, so NOTHING was executed. ")).toBe(true);
    expect(parsed.prose).toBe("a\n\nb\n\nc");
  });

  it("rejects a body that does not start with async", () => {
    const parsed = parseFencedReply(`Here:\n${fence}ts\nconst x = await itx.chat.sendMessage("hi");\n${fence}`);
    expect(parsed.kind).toBe("rejected");
    if (parsed.kind !== "rejected") return;
    expect(parsed.reason).toBe("malformed");
    expect(parsed.feedback.startsWith("Your code block did NOT run. ")).toBe(true);
    expect(parsed.feedback).toContain("async");
    expect(parsed.prose).toBe("Here:");
  });

  it("does not take `asyncFoo` for async", () => {
    expect(parseFencedReply(`${fence}ts\nasyncFoo()\n${fence}`).kind).toBe("rejected");
  });

  it("yields nothing (only prose) when there is no fence", () => {
    expect(parseFencedReply("  Just chatting. Inline ``` is not a fence.  ")).toEqual({
      kind: "none",
      prose: "Just chatting. Inline ``` is not a fence.",
    });
  });

  it("ignores fences that are not at line start", () => {
    expect(parseFencedReply(`text\n  ${fence}ts\n  async () => 1\n  ${fence}`).kind).toBe("none");
  });

  it("rejects a lone non-TypeScript fence with the did-NOT-run feedback naming its language (codemode.md)", () => {
    const parsed = parseFencedReply(`${fence}python\nprint("hi")\n${fence}`);
    expect(parsed).toMatchObject({ kind: "rejected", reason: "malformed", prose: "" });
    expect(parsed.kind === "rejected" && parsed.feedback).toMatch(/did NOT run.*```python fence/s);
  });

  it("rejects a single non-script fence beside prose, keeping the prose for the user", () => {
    const parsed = parseFencedReply(`The config:\n${fence}json\n{"a": 1}\n${fence}`);
    expect(parsed).toMatchObject({ kind: "rejected", reason: "malformed", prose: "The config:" });
  });

  it("names a bare fence as one with no language", () => {
    const parsed = parseFencedReply(`${fence}\nsome text\n${fence}`);
    expect(parsed.kind === "rejected" && parsed.feedback).toMatch(/a fence with no language/);
  });

  it("does not end the script at a fence written inside a template literal", () => {
    // Inside a template a fence can only be written escaped; the script still ends at the real fence.
    const body = "async (itx) => {\n  const md = `\n\\`\\`\\`ts\nx\n\\`\\`\\`\n`;\n  return md;\n}";
    const parsed = parseFencedReply(`${fence}ts\n${body}\n${fence}\nafter`);
    expect(parsed).toEqual({ kind: "script", code: body, prose: "after" });
  });

  it("does not end the script at a ``` line inside a block comment, nor count it as a second block", () => {
    const body = `async (itx) => {\n  /*\n${fence}\n  */\n  return "\`" + '\`' + /\`/.source;\n}`;
    const parsed = parseFencedReply(`${fence}ts\n${body}\n${fence}`);
    expect(parsed).toEqual({ kind: "script", code: body, prose: "" });
  });

  it("ends at the first real closing fence after strings that merely contain backticks", () => {
    const body = "async (itx) => {\n  const s = \"```\";\n  return s;\n}";
    const parsed = parseFencedReply(`${fence}ts\n${body}\n${fence}\n\nDone.`);
    expect(parsed).toEqual({ kind: "script", code: body, prose: "Done." });
  });

  it("falls back to the first closing line when the lexical scan never closes", () => {
    // An unterminated template literal would otherwise swallow the closing fence.
    const body = "async (itx) => `oops";
    expect(parseFencedReply(`${fence}ts\n${body}\n${fence}\nx`)).toEqual({ kind: "script", code: body, prose: "x" });
  });

  it("rejects a ts fence that never closes (a cut-off script must not run)", () => {
    const parsed = parseFencedReply(`Working on it\n${fence}ts\nasync (itx) => {\n  await itx.chat.sendMessage("x");`);
    expect(parsed.kind).toBe("rejected");
    if (parsed.kind !== "rejected") return;
    expect(parsed.reason).toBe("malformed");
    expect(parsed.feedback).toMatch(/^Your code block did NOT run/);
    expect(parsed.prose).toBe("Working on it");
  });
});

describe("parseTagReply", () => {
  it("scenario 1b @33: status, trimmed body as code, prose before the tag", () => {
    const reply = 'let me check!\n<codemode status="Counting open PRs">\nreturn (await itx.repo.listPulls({ state: "open" })).length;\n</codemode>';
    expect(parseTagReply(reply)).toEqual({
      kind: "script",
      code: 'return (await itx.repo.listPulls({ state: "open" })).length;',
      status: "Counting open PRs",
      prose: "let me check!",
    });
  });

  it("scenario 1 @28: a one-liner with only `return` ends the turn", () => {
    const reply = "Hi! I'm your project's agent — I can read and change the repo, run scripts, wire up integrations…\n<codemode status=\"Idle\">return</codemode>";
    expect(parseTagReply(reply)).toEqual({
      kind: "end-turn",
      status: "Idle",
      prose: "Hi! I'm your project's agent — I can read and change the repo, run scripts, wire up integrations…",
    });
  });

  it.each([
    ["<codemode>\n</codemode>"],
    ["<codemode>\nreturn;\n</codemode>"],
    ["<codemode>return;</codemode>"],
    ["<codemode>   </codemode>"],
  ])("an empty or bare-return body ends the turn: %j", (reply) => {
    expect(parseTagReply(reply)).toEqual({ kind: "end-turn", prose: "" });
  });

  it("runs a one-liner with a real body", () => {
    expect(parseTagReply('<codemode status="x">return 1 + 1;</codemode>')).toEqual({
      kind: "script",
      code: "return 1 + 1;",
      status: "x",
      prose: "",
    });
  });

  it("joins the prose before and after the tag with one blank line", () => {
    const reply = "Before.\n\n<codemode>\nreturn 1;\n</codemode>\n\n\nAfter.\n";
    expect(parseTagReply(reply)).toEqual({ kind: "script", code: "return 1;", prose: "Before.\n\nAfter." });
  });

  it("ends the body at the LAST closer", () => {
    const reply = '<codemode>\nconst s = "\n</codemode>\n";\nreturn s;\n</codemode>\ntail';
    expect(parseTagReply(reply)).toEqual({
      kind: "script",
      code: 'const s = "\n</codemode>\n";\nreturn s;',
      prose: "tail",
    });
  });

  it("rejects more than one opener as multiple", () => {
    const parsed = parseTagReply("a\n<codemode>\nreturn 1;\n</codemode>\n<codemode>\nreturn 2;\n</codemode>");
    expect(parsed.kind).toBe("rejected");
    if (parsed.kind !== "rejected") return;
    expect(parsed.reason).toBe("multiple");
    expect(parsed.count).toBe(2);
    expect(parsed.feedback).toMatch(/^Your response contained 2 <codemode> blocks, so NOTHING was executed\. /);
  });

  it("rejects an unclosed opener as malformed", () => {
    const parsed = parseTagReply('ok\n<codemode status="a">\nreturn 1;');
    expect(parsed.kind).toBe("rejected");
    if (parsed.kind !== "rejected") return;
    expect(parsed.reason).toBe("malformed");
    expect(parsed.feedback).toContain("did NOT run");
    expect(parsed.feedback).toContain("no </codemode> closer");
    expect(parsed.prose).toBe("ok");
  });

  it("rejects a stray closer (no opener) as malformed", () => {
    const parsed = parseTagReply("return 1;\n</codemode>");
    expect(parsed.kind).toBe("rejected");
    if (parsed.kind !== "rejected") return;
    expect(parsed.reason).toBe("malformed");
    expect(parsed.feedback).toContain("without a <codemode> opener");
  });

  it("rejects a closer before the opener as malformed", () => {
    const parsed = parseTagReply("</codemode>\n<codemode>\nreturn 1;\n</codemode>");
    expect(parsed.kind === "rejected" && parsed.reason).toBe("malformed");
  });

  it("an opener not at line start is no opener (its closer is then stray)", () => {
    const parsed = parseTagReply("let me check! <codemode>\nreturn 1;\n</codemode>");
    expect(parsed.kind === "rejected" && parsed.reason).toBe("malformed");
  });

  it("prose that only mentions the tag inline has no block", () => {
    expect(parseTagReply("I write `<codemode>` blocks and close them with `</codemode>` tags.")).toEqual({
      kind: "none",
      prose: "I write `<codemode>` blocks and close them with `</codemode>` tags.",
    });
  });

  it("no tag at all is prose only", () => {
    expect(parseTagReply("\nJust words.\n")).toEqual({ kind: "none", prose: "Just words." });
  });

  it("reads a status holding > and single-quoted statuses", () => {
    expect(parseTagReply('<codemode status="PRs > 5?">\nreturn 1;\n</codemode>')).toEqual({ kind: "script", code: "return 1;", status: "PRs > 5?", prose: "" });
    expect(parseTagReply("<codemode status='Idle'>return</codemode>")).toEqual({ kind: "end-turn", status: "Idle", prose: "" });
  });

  it("decodes entities in the status and drops an empty status", () => {
    expect(parseTagReply('<codemode status="Fixing &quot;a&quot; &amp; b">return 2;</codemode>')).toMatchObject({
      status: 'Fixing "a" & b',
    });
    expect(parseTagReply('<codemode status="  ">return 2;</codemode>')).not.toHaveProperty("status");
  });
});

describe("wrapScriptBody", () => {
  it("wraps a bare body as an async function of itx", () => {
    const body = 'return (await itx.repo.listPulls({ state: "open" })).length;';
    expect(wrapScriptBody(body)).toBe(`async (itx) => {\n${body}\n}`);
  });

  it.each([
    "async (itx) => {\n  return 1;\n}",
    "async (itx: Itx): Promise<number> => { return 1; };",
    "async function main(itx) {\n  return `}${1}`;\n}",
    "async itx => itx.agent.path",
    "async function main(itx: Itx): Promise<number> {\n  return 1;\n}",
    'async (itx, label = String(")")) => { return label; }',
    "async (\n  itx, // the surface (really)\n) => itx.agent.path",
    "async (itx, quote = /'/) => { return quote.source; }",
    'async (itx) => {\n  const open = /{|\\(/g;\n  return "a{b".replace(open, "").length / 2 / 1;\n}',
    "async (itx) => { const m = /[/}]/.exec(\"}\"); return typeof /\\)/ === \"object\" ? m : null; }",
  ])("keeps a body that is already one async function: %j", (code) => {
    expect(isAsyncFunctionSource(code)).toBe(true);
    expect(wrapScriptBody(code)).toBe(code);
  });

  it("given 64 KB of an unclosed head full of `):`, when checked, then it is read in time proportional to its length (the host's main thread runs it)", () => {
    const heads = (scale: number) => ["async (" + "):".repeat(8_000 * scale), "async function f(" + "):".repeat(8_000 * scale), "async (" + "(:".repeat(8_000 * scale), "async (" + "(/[".repeat(5_500 * scale), "async (itx) => {" + "(/[".repeat(5_500 * scale)];
    for (const code of heads(4)) expect(isAsyncFunctionSource(code)).toBe(false);
    // A regex of two lazy scans took 2.3 s for the first of these alone: growth ≈ 16 from 16 to 64 KB.
    expect(growthFrom1To4((scale) => heads(scale).forEach(isAsyncFunctionSource))).toBeLessThan(LINEAR_GROWTH_BOUND);
  });

  it("wraps a body that only starts with an async helper", () => {
    const body = "async function helper() { return 1; }\nreturn await helper();";
    expect(isAsyncFunctionSource(body)).toBe(false);
    expect(wrapScriptBody(body)).toBe(`async (itx) => {\n${body}\n}`);
    // A regular expression's brace in the helper does not make the rest of the body part of it.
    const withRegex = "async function helper(s) { return /}/.test(s); }\nreturn await helper(\"}\");";
    expect(isAsyncFunctionSource(withRegex)).toBe(false);
  });

  it("given divisions that only look like regular expressions, when checked, then they are divisions", () => {
    expect(isAsyncFunctionSource("async (itx) => { const a = 4, b = 2, g = 1; return a / b / g; }")).toBe(true);
    expect(isAsyncFunctionSource("async (itx) => { const x = (8) / 2 }; return 1;")).toBe(false);
  });
});

describe("a fenced reply of many blocks that open block comments", () => {
  it("given 400 KB of ```ts blocks each opening /*, when parsed, then it is rejected as multiple with their count, in time proportional to its length", () => {
    // Each block's script-aware scan used to read to the end of the reply: 38 s for this reply.
    const block = "```ts\n/*\n```\n";
    const count = Math.floor(400_000 / block.length);
    const parsed = parseFencedReply(block.repeat(count));
    expect(parsed).toMatchObject({ kind: "rejected", reason: "multiple", count });
  });

  it("given 335 KB of prose lines and empty blocks, when parsed, then it is rejected as multiple with its prose, in time proportional to its length", () => {
    // Red-team: the prose around 19 705 blocks was joined pairwise, trimming the text so far at
    // each block: 2 s of the reducer's thread per reply, and a feedback loop repeated it.
    const text = "xxxxxxxx\n```\n```\n".repeat(19_705);
    const parsed = parseFencedReply(text);
    expect(growthFrom1To4((scale) => parseFencedReply("xxxxxxxx\n```\n```\n".repeat(4_926 * scale)))).toBeLessThan(LINEAR_GROWTH_BOUND);
    expect(parsed).toMatchObject({ kind: "rejected", reason: "multiple", count: 19_705 });
    expect(parsed.prose).toBe(Array.from({ length: 19_705 }, () => "xxxxxxxx").join("\n\n"));
  });

  it("given a single script whose comment hides a fence-like line, when parsed, then the script-aware scan still finds its real close", () => {
    const text = "```ts\nasync (itx) => {\n  /*\n```\n  */\n  return 1;\n}\n```\nDone.";
    const parsed = parseFencedReply(text);
    expect(parsed).toMatchObject({ kind: "script", prose: "Done." });
  });
});

describe("a fence opener line", () => {
  /** The rule as the regular expression wrote it (quadratic on a long line ending in a backtick). */
  const byRegex = (line: string) => {
    const match = /^(`{3,})([^`\s]*)([^`]*)$/.exec(line);
    return match === null ? undefined : { fenceLength: match[1]!.length, language: match[2]!, info: match[3]! };
  };

  it.each(["```", "```ts", "````ts status=\"x\"", "```ts  info with spaces ", "``` ts", "```\tjs", "``", "```ts`", "```a`b", "x```ts", "````", "```ts\u00a0info", "```é中 文", ""])(
    "given %j, when read, then it opens a block exactly as the rule says",
    (line) => {
      expect(fenceOpener(line)).toEqual(byRegex(line));
    },
  );

  it("given a model reply with a 150 KB line of a fence, letters and a late backtick, when parsed, then it is prose, read in time proportional to its length", () => {
    // The regex tried every split of language and info: 20 s for this line, in the reducer and
    // in every viewer's browser on every update (red-team).
    const line = "```" + "a".repeat(150_000) + "`";
    const parsed = parseFencedReply(`Here you go:\n${line}\nend`);
    expect(parsed.kind).toBe("none");
    expect(parseTagReply(`Here you go:\n${line}\nend`).kind).toBe("none");
    const reply = (scale: number) => `Here you go:\n\`\`\`${"a".repeat(150_000 * scale)}\`\nend`;
    expect(growthFrom1To4((scale) => [parseFencedReply(reply(scale)), parseTagReply(reply(scale))])).toBeLessThan(LINEAR_GROWTH_BOUND);
  });
});
