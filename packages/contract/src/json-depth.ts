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

/** How many keys the objects of a parsed JSON value hold, all levels together (what `jsonShapeOf` counts in its text). */
export function jsonKeyCount(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  let keys = 0;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) if (typeof item === "object" && item !== null) keys += jsonKeyCount(item);
    return keys;
  }
  // A parsed value's objects inherit nothing enumerable: for…in walks its own keys, unallocated.
  const object = value as Record<string, unknown>;
  for (const key in object) {
    keys++;
    const item = object[key];
    if (typeof item === "object" && item !== null) keys += jsonKeyCount(item);
  }
  return keys;
}

/**
 * Where a JSON text first holds a key twice in one object: the path of the second one (keys
 * and array indices), or undefined. `JSON.parse` keeps the last silently, so a proxy or a
 * logger in front that reads the first sees another request than the one acted on. For text
 * that parses (the caller has parsed it); one linear scan, each key decoded.
 */
export function duplicateKeyPath(text: string): ReadonlyArray<string | number> | undefined {
  type Frame = { readonly keys: Set<string>; key: string | undefined; expectingKey: boolean } | { index: number };
  const frames: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const start = i;
      let escaped = false;
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) {
        if (text.charCodeAt(i) === 0x5c /* \ */) {
          escaped = true;
          i++;
        }
      }
      const top = frames.at(-1);
      if (top !== undefined && "keys" in top && top.expectingKey) {
        const key = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
        top.key = key;
        top.expectingKey = false;
        if (top.keys.has(key)) return frames.map((frame) => ("keys" in frame ? (frame.key as string) : frame.index));
        top.keys.add(key);
      }
    } else if (c === 0x7b /* { */) frames.push({ keys: new Set(), key: undefined, expectingKey: true });
    else if (c === 0x5b /* [ */) frames.push({ index: 0 });
    else if (c === 0x7d /* } */ || c === 0x5d /* ] */) frames.pop();
    else if (c === 0x2c /* , */) {
      const top = frames.at(-1);
      if (top !== undefined) {
        if ("keys" in top) top.expectingKey = true;
        else top.index++;
      }
    }
  }
  return undefined;
}
