// The one layout a script is typechecked AND executed in: provider declarations and itx.d.ts
// live in their own virtual files; the script file holds the preamble, the `results`
// preamble, then the wrapped script bound to a typed `itx`. Because both phases use the same
// text, a preamble constant the checker accepted is really in scope at run time.

export const SCRIPT_BINDING = "__itxScript";

export interface ScriptSource {
  /** The full TypeScript text. */
  readonly text: string;
  /** Offset in `text` where the agent's own code starts; diagnostics before it never block. */
  readonly codeStart: number;
  /** Line (0-based) in `text` of the first line of the agent's own code. */
  readonly codeStartLine: number;
}

export interface ScriptSourceParts {
  /** TypeScript injected above every script (preamble-set entries, in order). */
  readonly preamble: string;
  /** `const results = [...] as const` (may be empty). */
  readonly resultsPreamble: string;
  /** The script as written (trimmed), and its wrapped async-function form. */
  readonly code: string;
  readonly wrapped: string;
}

export function buildScriptSource(parts: ScriptSourceParts): ScriptSource {
  const head =
    `${parts.preamble}\n` +
    `${parts.resultsPreamble}\n` +
    `const ${SCRIPT_BINDING}: (itx: Itx) => Promise<unknown> = `;
  const text = `${head}${parts.wrapped};\n`;
  const inWrapped = parts.code.length > 0 ? parts.wrapped.indexOf(parts.code) : 0;
  const codeStart = head.length + Math.max(0, inWrapped);
  return { text, codeStart, codeStartLine: countLines(text.slice(0, codeStart)) };
}

function countLines(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}
