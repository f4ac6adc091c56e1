// The host runs an async function of `itx`. The tag dialect lets the model write a bare body
// (`return (await itx.repo.listPulls(…)).length;`), so a body that is not already ONE async
// function is wrapped before typecheck and execution; a fenced `async (itx) => {…}` is kept.
// A body that merely starts with a helper (`async function helper() {…}` then statements)
// is a body, not a function, so the check follows the function's braces to the end.

const ASYNC_HEAD =
  /^async\s*(?:function\b[^(]*\([^]*?\)(?:\s*:[^{]*?)?|\([^]*?\)(?:\s*:[^=]*?)?\s*=>|[A-Za-z_$][\w$]*\s*=>)\s*/;

/** Index of the `}` matching the `{` at `open`, skipping strings, templates and comments. */
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
    if (ch === "/" && code[i + 1] === "/") {
      const end = code.indexOf("\n", i);
      if (end === -1) return null;
      i = end;
    } else if (ch === "/" && code[i + 1] === "*") {
      const end = code.indexOf("*/", i + 2);
      if (end === -1) return null;
      i = end + 1;
    } else if (ch === "'" || ch === '"') {
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
  const head = ASYNC_HEAD.exec(trimmed);
  if (head === null) return false;
  const bodyStart = head[0].length;
  // An arrow with an expression body (`async (itx) => itx.x()`) is one expression.
  if (trimmed[bodyStart] !== "{") return /=>\s*$/.test(head[0]);
  const close = matchingBrace(trimmed, bodyStart);
  return close !== null && /^[\s;]*$/.test(trimmed.slice(close + 1));
}

export function wrapScriptBody(code: string): string {
  return isAsyncFunctionSource(code) ? code : `async (itx) => {\n${code}\n}`;
}
