// Text in an event is well-formed Unicode: no lone surrogate. JSON's `\ud800` escape parses to
// one (from an API body, a script's value, a provider's chunk); stored, it came back as U+FFFD
// from some reads (TextEncoder, a KV title) and as itself from others, and a prompt carrying it
// is one a provider may refuse on every later turn. So a writer's own input is refused
// (`parseEventInput`), and a service storing text it did not write (the model's reply, a
// script's result) mends it first, as a UTF-8 decoder would.

/**
 * Where in a value a string, or an object's key, is not well-formed (holds a lone surrogate):
 * the path's segments, or undefined when all of it is. Builds nothing on the common path.
 */
export function illFormedTextAt(value: unknown): (string | number)[] | undefined {
  if (typeof value === "string") return value.isWellFormed() ? undefined : [];
  if (typeof value !== "object" || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = illFormedTextAt(value[i]);
      if (found !== undefined) return [i, ...found];
    }
    return undefined;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (!key.isWellFormed()) return [key];
    const found = illFormedTextAt((value as Record<string, unknown>)[key]);
    if (found !== undefined) return [key, ...found];
  }
  return undefined;
}

/** A path's segments as `a.b[0].c`, a key's lone surrogate written as its escape. */
export function formatValuePath(prefix: string, segments: readonly (string | number)[]): string {
  let path = prefix;
  for (const segment of segments) {
    if (typeof segment === "number") path += `[${segment}]`;
    else path += `${path === "" ? "" : "."}${segment.isWellFormed() ? segment : JSON.stringify(segment).slice(1, -1)}`;
  }
  return path;
}

/**
 * The value with every lone surrogate in its strings and keys replaced by U+FFFD, as decoding
 * its UTF-8 would have; the value itself (not a copy) when it is already well-formed.
 */
export function mendIllFormedText<T>(value: T): T {
  return illFormedTextAt(value) === undefined ? value : (mended(value) as T);
}

function mended(value: unknown): unknown {
  if (typeof value === "string") return value.toWellFormed();
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map(mended);
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    // Defined, not assigned: a parsed "__proto__" key is data, and assigned it would set the prototype.
    Object.defineProperty(out, key.toWellFormed(), { value: mended((value as Record<string, unknown>)[key]), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * The first `max` UTF-16 units of `text` at most, never ending in half of a surrogate pair (a cut
 * there would leave a lone surrogate): where a settlement, a render or a log cuts text short.
 */
export function textHead(text: string, max: number): string {
  if (max <= 0) return "";
  const cut = text.length <= max ? text : text.slice(0, max);
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}
