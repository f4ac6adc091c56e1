// Finds where a fenced TypeScript script really ends. A line of three backticks inside a
// string, template literal, comment or regex literal is part of the script, not its closing
// fence, so the scan tracks JavaScript lexical state instead of matching lines blindly.
// Only templates and block comments can span lines; strings and regexes that reach a line
// end are reset, so one mis-read token cannot swallow the rest of the reply.

export interface FenceClose {
  /** Index where the closing fence line starts (end of the body). */
  readonly bodyEnd: number;
  /** Index just past the closing fence line (including its newline). */
  readonly after: number;
}

type Mode = "code" | "line-comment" | "block-comment" | "single" | "double" | "template" | "regex";

const REGEX_AFTER_CHARS = new Set("(,=:[!&|?{};+-*%<>~^");
const REGEX_AFTER_WORDS = new Set([
  "return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "instanceof", "yield", "await",
]);

export function isIdentChar(ch: string): boolean {
  return /[A-Za-z0-9_$]/.test(ch);
}

/**
 * Whether a `/` starts a regular expression (not a division) after this last significant
 * character and, when that ends an identifier, this word.
 */
export function regexMayStart(lastSignificant: string, lastWord: string): boolean {
  return lastSignificant === "" || REGEX_AFTER_CHARS.has(lastSignificant) || (isIdentChar(lastSignificant) && REGEX_AFTER_WORDS.has(lastWord));
}

/** If a closing fence of at least `fenceLength` backticks starts at `at`, returns its end. */
export function closingFenceAt(text: string, at: number, fenceLength: number): number | null {
  const lineEnd = text.indexOf("\n", at);
  const line = text.slice(at, lineEnd === -1 ? text.length : lineEnd).replace(/\r$/, "");
  const match = /^(`{3,})[ \t]*$/.exec(line);
  if (match === null || (match[1]?.length ?? 0) < fenceLength) return null;
  return lineEnd === -1 ? text.length : lineEnd + 1;
}

/** The first closing fence line at or after `from`, ignoring what the body means. */
export function findClosingFenceNaive(text: string, from: number, fenceLength: number): FenceClose | null {
  let at = from;
  while (at <= text.length) {
    const after = closingFenceAt(text, at, fenceLength);
    if (after !== null) return { bodyEnd: at, after };
    const next = text.indexOf("\n", at);
    if (next === -1) return null;
    at = next + 1;
  }
  return null;
}

/**
 * The closing fence of a script body that starts at `from` (the start of a line), skipping
 * fence-like lines inside template literals and block comments.
 */
export function findClosingFenceInScript(text: string, from: number, fenceLength: number): FenceClose | null {
  let mode: Mode = "code";
  const braces: ("brace" | "template")[] = [];
  let lastSignificant = "";
  let lastWord = "";
  let regexClass = false;
  let gap = false;
  let lineStart = true;

  for (let i = from; i < text.length; i++) {
    if (lineStart && mode === "code") {
      const after = closingFenceAt(text, i, fenceLength);
      if (after !== null) return { bodyEnd: i, after };
    }
    lineStart = false;
    const ch = text[i] as string;
    const next = text[i + 1] ?? "";

    if (ch === "\n") {
      lineStart = true;
      gap = true;
      if (mode === "line-comment" || mode === "single" || mode === "double" || mode === "regex") mode = "code";
      continue;
    }

    switch (mode) {
      case "line-comment":
        break;
      case "block-comment":
        if (ch === "*" && next === "/") {
          mode = "code";
          i++;
        }
        break;
      case "single":
      case "double":
        if (ch === "\\") i++;
        else if ((mode === "single" && ch === "'") || (mode === "double" && ch === '"')) {
          mode = "code";
          lastSignificant = ch;
          lastWord = "";
        }
        break;
      case "template":
        if (ch === "\\") i++;
        else if (ch === "`") {
          mode = "code";
          lastSignificant = "`";
          lastWord = "";
        } else if (ch === "$" && next === "{") {
          braces.push("template");
          mode = "code";
          lastSignificant = "{";
          lastWord = "";
          i++;
        }
        break;
      case "regex":
        if (ch === "\\") i++;
        else if (ch === "[") regexClass = true;
        else if (ch === "]") regexClass = false;
        else if (ch === "/" && !regexClass) {
          mode = "code";
          lastSignificant = "/";
          lastWord = "";
        }
        break;
      case "code":
        if (ch === " " || ch === "\t" || ch === "\r") {
          gap = true;
          break;
        }
        if (ch === "/" && next === "/") {
          mode = "line-comment";
          i++;
          break;
        }
        if (ch === "/" && next === "*") {
          mode = "block-comment";
          i++;
          break;
        }
        if (ch === "/") {
          if (regexMayStart(lastSignificant, lastWord)) {
            mode = "regex";
            regexClass = false;
            break;
          }
        }
        if (ch === "'") mode = "single";
        else if (ch === '"') mode = "double";
        else if (ch === "`") mode = "template";
        else if (ch === "{") braces.push("brace");
        else if (ch === "}" && braces.pop() === "template") mode = "template";

        if (isIdentChar(ch)) lastWord = !gap && isIdentChar(lastSignificant) ? lastWord + ch : ch;
        else lastWord = "";
        lastSignificant = ch;
        gap = false;
        break;
    }
  }
  return null;
}
