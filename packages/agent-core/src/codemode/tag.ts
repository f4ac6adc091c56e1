// The tag reply dialect (interpretResponses: false; the project worker interprets it):
//   <codemode status="…">        an opener at the start of a line
//   …body…
//   </codemode>                  a closer at the end of a line
// or a one-liner `<codemode status="Idle">return</codemode>`. The body ends at the LAST
// closer, so a body that mentions `</codemode>` itself still parses.

import { tagMalformedFeedback, tagMultipleFeedback } from "./feedback.ts";
import { joinProse, normaliseStatus, type ParsedReply } from "./reply.ts";

// Attribute values may hold `>` (status="a > b"), so attributes are matched as name="value".
const OPENER = /^<codemode((?:\s+[\w-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*>/;
const CLOSER = "</codemode>";

interface Opener {
  /** Index where the opener's line starts. */
  readonly lineStart: number;
  /** Index just past the opener's `>`. */
  readonly bodyStart: number;
  readonly attributes: string;
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
}

function findOpeners(text: string, starts: readonly number[]): Opener[] {
  const openers: Opener[] = [];
  for (const lineStart of starts) {
    const lineEnd = text.indexOf("\n", lineStart);
    const line = text.slice(lineStart, lineEnd === -1 ? text.length : lineEnd);
    const indent = line.length - line.trimStart().length;
    const match = OPENER.exec(line.slice(indent));
    if (match !== null) {
      openers.push({ lineStart, bodyStart: lineStart + indent + match[0].length, attributes: match[1] ?? "" });
    }
  }
  return openers;
}

/** Start indexes of every `</codemode>` that ends its line (only whitespace after it). */
function findClosers(text: string): number[] {
  const closers: number[] = [];
  for (let i = text.indexOf(CLOSER); i !== -1; i = text.indexOf(CLOSER, i + 1)) {
    const end = i + CLOSER.length;
    const lineEnd = text.indexOf("\n", end);
    if (text.slice(end, lineEnd === -1 ? text.length : lineEnd).trim() === "") closers.push(i);
  }
  return closers;
}

function statusOf(attributes: string): string | undefined {
  const match = /\bstatus\s*=\s*(?:"([^"]*)"|'([^']*)')/.exec(attributes);
  return normaliseStatus(match?.[1] ?? match?.[2]);
}

function rejectedMalformed(problem: "unclosed" | "stray-closer", prose: string): ParsedReply {
  return { kind: "rejected", reason: "malformed", feedback: tagMalformedFeedback(problem), prose };
}

export function parseTagReply(text: string): ParsedReply {
  const openers = findOpeners(text, lineStarts(text));
  const closers = findClosers(text);
  if (openers.length > 1) {
    const first = openers[0] as Opener;
    return {
      kind: "rejected",
      reason: "multiple",
      count: openers.length,
      feedback: tagMultipleFeedback(openers.length),
      prose: text.slice(0, first.lineStart).trim(),
    };
  }
  const opener = openers[0];
  if (opener === undefined) {
    return closers.length > 0 ? rejectedMalformed("stray-closer", text.trim()) : { kind: "none", prose: text.trim() };
  }
  const before = text.slice(0, opener.lineStart);
  if (closers.some((at) => at < opener.lineStart)) return rejectedMalformed("stray-closer", before.trim());
  const last = closers.at(-1);
  if (last === undefined || last < opener.bodyStart) return rejectedMalformed("unclosed", before.trim());

  const code = text.slice(opener.bodyStart, last).trim();
  const prose = joinProse(before, text.slice(last + CLOSER.length));
  const status = statusOf(opener.attributes);
  const withStatus = status === undefined ? {} : { status };
  if (code === "" || code === "return" || code === "return;") return { kind: "end-turn", ...withStatus, prose };
  return { kind: "script", code, ...withStatus, prose };
}
