// The host runs an async function of `itx`. The tag dialect lets the model write a bare body
// (`return (await itx.repo.listPulls(…)).length;`), so a body that is not already ONE async
// function is wrapped before typecheck and execution; a fenced `async (itx) => {…}` is kept.
// A body that merely starts with a helper (`async function helper() {…}` then statements)
// is a body, not a function, so the check follows the function's braces to the end.

import { isIdentChar, regexMayStart } from "./js-scan.ts";

// The head is read by hand, in one pass: a regex of two lazy scans (`\([^]*?\)(?:\s*:[^=]*?)?`)
// read to the end for every `)` followed by `:`, and a 64 KB script of `):` held the host's main
// thread for 2.3 s, on every run and every `itx.docs.typecheck` (red-team).
const FUNCTION_HEAD = /function\b[^(]*\(/y;
const NAME_ARROW = /[A-Za-z_$][\w$]*\s*=>\s*/y;

function skipSpace(code: string, from: number): number {
  let i = from;
  while (i < code.length && /\s/.test(code[i] as string)) i++;
  return i;
}

/**
 * At a comment's start: the index of its last character (the `\n` of a line comment), or null
 * when it never ends; undefined when no comment starts at `i`.
 */
function commentEndAt(code: string, i: number): number | null | undefined {
  if (code[i] !== "/") return undefined;
  if (code[i + 1] === "/") {
    const end = code.indexOf("\n", i);
    return end === -1 ? null : end;
  }
  if (code[i + 1] === "*") {
    const end = code.indexOf("*/", i + 2);
    return end === -1 ? null : end + 1;
  }
  return undefined;
}

/** The longest regular expression literal read as one (see regexEndAt). */
const MAX_REGEX_CHARS = 256;
/** Longer than any word after which a regular expression starts (`instanceof`). */
const REGEX_WORD_LOOKBACK = 11;

/**
 * At a `/` that is no comment: the index of the `/` that ends the regular expression starting
 * there, or undefined when it is a division (or never ends on its line). A regex's quotes,
 * braces and parentheses are not code: `async (itx = /'/) => {…}` and `/{/` in a body were read
 * as a string or a brace that never closed, and a whole function was wrapped as a bare body.
 */
function regexEndAt(code: string, i: number): number | undefined {
  let before = i - 1;
  while (before >= 0 && /\s/.test(code[before] as string)) before--;
  const previous = before < 0 ? "" : (code[before] as string);
  let wordStart = before;
  while (wordStart > 0 && before - wordStart < REGEX_WORD_LOOKBACK && isIdentChar(code[wordStart - 1] as string)) wordStart--;
  if (!regexMayStart(previous, code.slice(wordStart, before + 1))) return undefined;
  let inClass = false;
  // Bounded, so a line of `(/[` repeated, each a regex that never ends, is not read again from
  // each of its slashes to the line's end (quadratic); a longer regex is taken for a division.
  const end = Math.min(code.length, i + MAX_REGEX_CHARS);
  for (let j = i + 1; j < end; j++) {
    const ch = code[j];
    if (ch === "\n") return undefined;
    if (ch === "\\") j++;
    else if (ch === "[") inClass = true;
    else if (ch === "]") inClass = false;
    else if (ch === "/" && !inClass) return j;
  }
  return undefined;
}

/** Index of the `)` matching the `(` at `open`, skipping strings, templates, comments and regular expressions. */
function matchingParen(code: string, open: number): number | null {
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    const ch = code[i];
    const comment = commentEndAt(code, i);
    if (comment === null) return null;
    if (comment !== undefined) i = comment;
    else if (ch === "/") i = regexEndAt(code, i) ?? i;
    else if (ch === "'" || ch === '"' || ch === "`") {
      for (i++; i < code.length && code[i] !== ch; i++) if (code[i] === "\\") i++;
    } else if (ch === "(") depth++;
    else if (ch === ")" && --depth === 0) return i;
  }
  return null;
}

/**
 * Where an async function's body starts (`async function f(…) {`, `async (…) =>`, `async x =>`,
 * a return type allowed), and whether it is an arrow's; null when `code` does not open with one.
 */
function asyncHead(code: string): { readonly bodyStart: number; readonly arrow: boolean } | null {
  if (!code.startsWith("async")) return null;
  const i = skipSpace(code, 5);
  FUNCTION_HEAD.lastIndex = i;
  const fn = FUNCTION_HEAD.exec(code);
  if (fn !== null) {
    const close = matchingParen(code, i + fn[0].length - 1);
    if (close === null) return null;
    const after = skipSpace(code, close + 1);
    // A return type runs to the body's brace.
    const bodyStart = code[after] === ":" ? code.indexOf("{", after) : after;
    return bodyStart === -1 ? null : { bodyStart, arrow: false };
  }
  if (code[i] === "(") {
    const close = matchingParen(code, i);
    if (close === null) return null;
    let arrow = skipSpace(code, close + 1);
    // A return type runs to the arrow (it holds no `=`).
    if (code[arrow] === ":") arrow = code.indexOf("=", arrow);
    if (arrow === -1 || !code.startsWith("=>", arrow)) return null;
    return { bodyStart: skipSpace(code, arrow + 2), arrow: true };
  }
  if (i === 5) return null;
  NAME_ARROW.lastIndex = i;
  const named = NAME_ARROW.exec(code);
  return named === null ? null : { bodyStart: i + named[0].length, arrow: true };
}

/** Index of the `}` matching the `{` at `open`, skipping strings, templates, comments and regular expressions. */
function matchingBrace(code: string, open: number): number | null {
  const stack: ("brace" | "template")[] = [];
  let inTemplate = false;
  for (let i = open; i < code.length; i++) {
    const ch = code[i];
    if (inTemplate) {
      if (ch === "\\") i++;
      else if (ch === "`") inTemplate = false;
      else if (ch === "$" && code[i + 1] === "{") {
        stack.push("template");
        inTemplate = false;
        i++;
      }
      continue;
    }
    const comment = commentEndAt(code, i);
    if (comment === null) return null;
    if (comment !== undefined) i = comment;
    else if (ch === "/") i = regexEndAt(code, i) ?? i;
    else if (ch === "'" || ch === '"') {
      for (i++; i < code.length && code[i] !== ch && code[i] !== "\n"; i++) if (code[i] === "\\") i++;
    } else if (ch === "`") inTemplate = true;
    else if (ch === "{") stack.push("brace");
    else if (ch === "}") {
      if (stack.pop() === "template") inTemplate = true;
      else if (stack.length === 0) return i;
    }
  }
  return null;
}

/** True when `code` is exactly one async function expression (a trailing `;` allowed). */
export function isAsyncFunctionSource(code: string): boolean {
  const trimmed = code.trim();
  const head = asyncHead(trimmed);
  if (head === null) return false;
  const { bodyStart } = head;
  // An arrow with an expression body (`async (itx) => itx.x()`) is one expression.
  if (trimmed[bodyStart] !== "{") return head.arrow;
  const close = matchingBrace(trimmed, bodyStart);
  return close !== null && /^[\s;]*$/.test(trimmed.slice(close + 1));
}

export function wrapScriptBody(code: string): string {
  return isAsyncFunctionSource(code) ? code : `async (itx) => {\n${code}\n}`;
}
