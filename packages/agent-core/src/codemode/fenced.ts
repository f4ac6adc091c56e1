// The fenced reply dialect (interpretResponses: true): ONE ```ts block whose body is an async
// function. Fences count only at the start of a line; a script's own closing fence is found
// with JavaScript-aware scanning so ``` inside a string does not cut the script short.

import { type FenceClose, findClosingFenceInScript, findClosingFenceNaive } from "./js-scan.ts";
import { fencedMultipleFeedback, fencedNotAsyncFeedback, fencedNotScriptFeedback, fencedUnclosedFeedback } from "./feedback.ts";
import { joinProseParts, normaliseStatus, type ParsedReply } from "./reply.ts";

const SCRIPT_LANGUAGES = new Set(["ts", "typescript", "tsx", "js", "javascript", "jsx", "mts"]);

interface FencedBlock {
  readonly start: number;
  readonly bodyStart: number;
  /** null when the block never closed. */
  readonly close: FenceClose | null;
  readonly language: string;
  readonly info: string;
}

/**
 * A line opening a fenced block: three or more backticks, then the language (up to the first
 * whitespace) and the info string, with no backtick after the fence. Read in one pass: the
 * regular expression it replaces (`/^(`{3,})([^`\s]*)([^`]*)$/`) tried every split of language
 * and info before failing on a late backtick, so one long line such as "```aaa…a`" cost its
 * length squared (150 KB: 20 s in the reducer, and in every viewer's browser on every update).
 */
export function fenceOpener(line: string): { fenceLength: number; language: string; info: string } | undefined {
  let fenceLength = 0;
  while (line.charCodeAt(fenceLength) === BACKTICK) fenceLength += 1;
  if (fenceLength < 3 || line.includes("`", fenceLength)) return undefined;
  let languageEnd = fenceLength;
  while (languageEnd < line.length && !/\s/.test(line[languageEnd] as string)) languageEnd += 1;
  return { fenceLength, language: line.slice(fenceLength, languageEnd), info: line.slice(languageEnd) };
}

const BACKTICK = 96;

function scanBlocks(text: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  let at = 0;
  // A script-aware scan that finds no close has read to the end of the reply; the blocks after
  // it close naively. Scanning each to the end made a reply of many blocks opening `/*` cost its
  // length squared: 400 KB held the reducer for 38 s. (Such a reply has several blocks, so it is
  // rejected as `multiple` either way.)
  let scriptAware = true;
  while (at < text.length) {
    const lineEnd = text.indexOf("\n", at);
    const line = text.slice(at, lineEnd === -1 ? text.length : lineEnd).replace(/\r$/, "");
    const opener = fenceOpener(line);
    if (opener !== undefined) {
      const fenceLength = opener.fenceLength;
      const language = opener.language.toLowerCase();
      const bodyStart = lineEnd === -1 ? text.length : lineEnd + 1;
      let close = SCRIPT_LANGUAGES.has(language) && scriptAware ? findClosingFenceInScript(text, bodyStart, fenceLength) : null;
      if (close === null && SCRIPT_LANGUAGES.has(language)) scriptAware = false;
      close ??= findClosingFenceNaive(text, bodyStart, fenceLength);
      blocks.push({ start: at, bodyStart, close, language, info: opener.info });
      if (close === null) break;
      at = close.after;
      continue;
    }
    if (lineEnd === -1) break;
    at = lineEnd + 1;
  }
  return blocks;
}

function proseOutside(text: string, blocks: readonly FencedBlock[]): string {
  const parts: string[] = [];
  let at = 0;
  for (const block of blocks) {
    parts.push(text.slice(at, block.start));
    at = block.close?.after ?? text.length;
  }
  parts.push(text.slice(at));
  return joinProseParts(parts);
}

function statusFromInfo(info: string): string | undefined {
  const match = /\bstatus\s*=\s*(?:"([^"]*)"|'([^']*)')/.exec(info);
  return normaliseStatus(match?.[1] ?? match?.[2]);
}

export function parseFencedReply(text: string): ParsedReply {
  const blocks = scanBlocks(text);
  if (blocks.length === 0) return { kind: "none", prose: text.trim() };
  if (blocks.length > 1) {
    return {
      kind: "rejected",
      reason: "multiple",
      count: blocks.length,
      feedback: fencedMultipleFeedback(blocks.length),
      prose: proseOutside(text, blocks),
    };
  }
  const block = blocks[0] as FencedBlock;
  const prose = proseOutside(text, blocks);
  if (block.close === null) {
    return { kind: "rejected", reason: "malformed", feedback: fencedUnclosedFeedback(), prose };
  }
  // codemode.md: any single fence whose body is not an async function gets the "did NOT run"
  // feedback, whatever its language, so a model that answered in ```python learns that nothing ran.
  if (!SCRIPT_LANGUAGES.has(block.language)) {
    return { kind: "rejected", reason: "malformed", feedback: fencedNotScriptFeedback(block.language), prose };
  }
  const code = text.slice(block.bodyStart, block.close.bodyEnd).trim();
  if (!/^async\b/.test(code)) {
    return { kind: "rejected", reason: "malformed", feedback: fencedNotAsyncFeedback(), prose };
  }
  const status = statusFromInfo(block.info);
  return status === undefined ? { kind: "script", code, prose } : { kind: "script", code, status, prose };
}
