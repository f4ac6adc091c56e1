// What the capability host injects above every script of a scope, at typecheck and at
// execution: the preamble entries (`preamble-set` / `preamble-removed`, first-set position
// kept) and `results`, the last settled results newest first. Pure: the host folds the
// events and asks for the source text.

import type { AgentEvent } from "@agentrt/contract";
import { INLINE_DATA_LIMIT, type ScriptSettlement } from "./render-result.ts";
import { inferJsonType } from "./json-type.ts";

export interface PreambleEntry {
  readonly key: string;
  readonly code: string;
}

/** `preamble-set` upserts keeping the entry's first position; `preamble-removed` deletes. */
export function applyPreambleEvent(entries: readonly PreambleEntry[], event: AgentEvent): readonly PreambleEntry[] {
  if (event.type === "capability-host/preamble-set") {
    const { key, code } = event.payload;
    return entries.some((e) => e.key === key)
      ? entries.map((e) => (e.key === key ? { key, code } : e))
      : [...entries, { key, code }];
  }
  if (event.type === "capability-host/preamble-removed") {
    const { key } = event.payload;
    return entries.some((e) => e.key === key) ? entries.filter((e) => e.key !== key) : entries;
  }
  return entries;
}

/**
 * The entries in order, each under a comment naming its key (diagnostics point at it). The key is
 * written as JSON with U+2028 and U+2029 escaped too: JSON leaves them as they are, and either
 * ends a `//` comment, so a key had run as code (`notes\u2028const HIDDEN = 1;//`).
 */
export function buildPreambleSource(entries: readonly PreambleEntry[]): string {
  return entries.map((e) => `// preamble entry ${JSON.stringify(e.key).replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029")}\n${e.code}`).join("\n\n");
}

export interface SettledScriptResult {
  readonly executionId: string;
  readonly settlement: ScriptSettlement;
}

export const RESULTS_PREAMBLE_MAX = 20;
export const RESULT_ERROR_TEXT_LIMIT = 2_000;

export interface ResultsPreambleOptions {
  /**
   * The expression (inside `load`'s async body) whose value is the result, given the execution
   * id as a string literal. By default it reads `.result` off the settlement that
   * `itx.capabilityHost.getScriptResult(id)` resolves to.
   */
  readonly loadExpression?: (executionIdLiteral: string) => string;
}

const defaultLoad = (id: string) =>
  `((await itx.capabilityHost.getScriptResult(${id})) as { result?: unknown } | null)?.result`;

/** The loader's view of `itx`: structural, so the host's real `itx` satisfies it. */
export const RESULTS_ITX_TYPE = "type ScriptResultsItx = { capabilityHost: { getScriptResult(executionId: string): Promise<unknown> } };";

function indent(text: string, by: string): string {
  return text.replace(/\n/g, `\n${by}`);
}

function dataLiteral(compactJson: string): string {
  // `{"__proto__": …}` in an object literal would set the prototype instead of a key.
  return compactJson.includes('"__proto__":') ? `JSON.parse(${JSON.stringify(compactJson)})` : compactJson;
}

function entrySource(result: SettledScriptResult, options: ResultsPreambleOptions): string {
  const id = JSON.stringify(result.executionId);
  const { settlement } = result;
  if (settlement.status === "failed") {
    const error =
      settlement.error.length <= RESULT_ERROR_TEXT_LIMIT
        ? settlement.error
        : `${settlement.error.slice(0, RESULT_ERROR_TEXT_LIMIT - 1)}…`;
    return `{ executionId: ${id}, status: "failed", failureKind: ${JSON.stringify(settlement.failureKind)}, error: ${JSON.stringify(error)} }`;
  }
  const load = (type: string) =>
    `{ executionId: ${id}, status: "succeeded", load: async (itx: ScriptResultsItx): Promise<${indent(type, "  ")}> => ` +
    `(${(options.loadExpression ?? defaultLoad)(id)}) as ${indent(type, "  ")} }`;
  if (settlement.result === undefined) {
    return settlement.oversized === undefined
      ? `{ executionId: ${id}, status: "succeeded", data: undefined }`
      : load(settlement.oversized.typeText);
  }
  const compact = JSON.stringify(settlement.result) ?? "null";
  if (compact.length <= INLINE_DATA_LIMIT) return `{ executionId: ${id}, status: "succeeded", data: ${dataLiteral(compact)} }`;
  return load(inferJsonType(settlement.result));
}

/**
 * `const results = [...] as const`, newest first, at most 20: small results inline as `data`,
 * large ones typed with a `load(itx)` that reads them back, failures as their error text.
 */
export function buildResultsPreamble(
  newestFirst: readonly SettledScriptResult[],
  options: ResultsPreambleOptions = {},
): string {
  const entries = newestFirst.slice(0, RESULTS_PREAMBLE_MAX).map((r) => `  ${entrySource(r, options)},`);
  return [
    RESULTS_ITX_TYPE,
    "/** Your latest script results, newest first: `results[0]` is the last one. */",
    entries.length === 0 ? "const results = [] as const;" : `const results = [\n${entries.join("\n")}\n] as const;`,
  ].join("\n");
}

/**
 * Everything above the script: the preamble entries, then `results`. `lineCount` lets the
 * host map a diagnostic's line back into the model's script.
 */
export function buildScriptPrelude(
  entries: readonly PreambleEntry[],
  newestFirst: readonly SettledScriptResult[],
  options: ResultsPreambleOptions = {},
): { readonly source: string; readonly lineCount: number } {
  const parts = [buildPreambleSource(entries), buildResultsPreamble(newestFirst, options)].filter((p) => p.length > 0);
  const source = `${parts.join("\n\n")}\n`;
  return { source, lineCount: source.split("\n").length - 1 };
}
