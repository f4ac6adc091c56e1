// JSON nesting is bounded wherever JSON enters the system (an HTTP or gRPC body, the values a
// script hands an itx call): a text of a few thousand `[` parses fine but then overflows the
// stack of whatever walks it (validation, fold, serialisation, a structured clone between
// threads). One linear scan over the text finds the depth without building anything.

/** The deepest nesting accepted: the gateway's MAX_JSON_DEPTH default, and the sandbox bridge's. */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/** True when arrays and objects in the JSON text nest deeper than `maxDepth` (strings are skipped correctly). */
export function jsonDepthExceeds(text: string, maxDepth: number): boolean {
  return jsonShapeOf(text, maxDepth).depth > maxDepth;
}

/**
 * How deep a JSON text's arrays and objects nest, how many it holds, and how many keys its
 * objects hold, in one linear scan that builds nothing (strings are skipped correctly). The
 * counts are what parsing it would build: a 24 MB text of `{},` is 8 million objects, and one
 * object of 2 million keys costs as much; gigabytes once parsed. The scan stops once the depth
 * passes `stopAboveDepth`.
 */
export function jsonShapeOf(text: string, stopAboveDepth = Number.POSITIVE_INFINITY): { readonly depth: number; readonly containers: number; readonly keys: number } {
  let depth = 0;
  let deepest = 0;
  let containers = 0;
  let keys = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      containers++;
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > stopAboveDepth) break;
      }
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
    else if (c === 0x3a /* : */) keys++;
  }
  return { depth: deepest, containers, keys };
}
