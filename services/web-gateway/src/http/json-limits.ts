// JSON nesting is bounded before parsing: a body of a few thousand `[` parses fine but then
// overflows the stack of whatever walks it (validation, fold, serialisation) and used to give
// a 500. One linear scan over the text finds the depth without building anything.

import { GatewayError } from "../errors.ts";

export const DEFAULT_MAX_JSON_DEPTH = 64;

/** The deepest nesting of arrays and objects in a JSON text (strings are skipped correctly). */
export function jsonDepthExceeds(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > maxDepth) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}

/** JSON.parse with the depth bound: 400 naming the field and the limit, or the parse error. */
export function parseJsonBounded(text: string, maxDepth: number, field: string): unknown {
  if (jsonDepthExceeds(text, maxDepth)) {
    throw new GatewayError("invalid_request", `${field} nests JSON deeper than the limit of ${maxDepth} levels (MAX_JSON_DEPTH).`, {
      maxDepth,
      issues: [{ path: field, message: `nesting deeper than ${maxDepth} levels` }],
    });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new GatewayError("invalid_request", `${field} is not valid JSON: ${(error as Error).message}.`, {
      issues: [{ path: field, message: "malformed JSON" }],
    });
  }
}
