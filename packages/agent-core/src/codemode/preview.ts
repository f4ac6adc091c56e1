// A bounded preview of a large JSON value: long arrays keep their first items and say how
// many were left out, long strings keep their head and say their length, deep nesting is
// cut. The preview is itself valid JSON, so the model reads it like the real thing.

export interface PreviewLimits {
  readonly arrayItems: number;
  readonly stringChars: number;
  readonly depth: number;
  readonly objectKeys: number;
}

export const PREVIEW_STEPS: readonly PreviewLimits[] = [
  { arrayItems: 5, stringChars: 200, depth: 6, objectKeys: 40 },
  { arrayItems: 3, stringChars: 80, depth: 4, objectKeys: 20 },
  { arrayItems: 1, stringChars: 40, depth: 3, objectKeys: 10 },
  { arrayItems: 1, stringChars: 20, depth: 1, objectKeys: 5 },
];

function elide(value: unknown, limits: PreviewLimits, depth: number): unknown {
  if (typeof value === "string") {
    return value.length <= limits.stringChars ? value : `${value.slice(0, limits.stringChars)}… (${value.length} chars)`;
  }
  if (value === null || typeof value !== "object") return value;
  if (depth >= limits.depth) return Array.isArray(value) ? `… (array of ${value.length})` : "… (object)";
  if (Array.isArray(value)) {
    const head = value.slice(0, limits.arrayItems).map((item) => elide(item, limits, depth + 1));
    return value.length > limits.arrayItems ? [...head, `… ${value.length - limits.arrayItems} more items (${value.length} in total)`] : head;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  const kept = entries.slice(0, limits.objectKeys).map(([k, v]) => [k, elide(v, limits, depth + 1)] as const);
  const out: Record<string, unknown> = {};
  for (const [k, v] of kept) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  if (entries.length > limits.objectKeys) out["…"] = `${entries.length - limits.objectKeys} more keys`;
  return out;
}

/** Pretty JSON of `value` with the elisions of `limits`. */
export function previewJson(value: unknown, limits: PreviewLimits): string {
  return JSON.stringify(elide(value, limits, 0), null, 2) ?? "undefined";
}
