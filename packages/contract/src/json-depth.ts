// JSON nesting is bounded wherever JSON enters the system (an HTTP or gRPC body, the values a
// script hands an itx call): a text of a few thousand `[` parses fine but then overflows the
// stack of whatever walks it (validation, fold, serialisation, a structured clone between
// threads). One linear scan over the text finds the depth without building anything.

/** The deepest nesting accepted: the gateway's MAX_JSON_DEPTH default, and the sandbox bridge's. */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/** True when arrays and objects in the JSON text nest deeper than `maxDepth` (strings are skipped correctly). */
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
