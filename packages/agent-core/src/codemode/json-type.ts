// A small TypeScript type inferrer for JSON values, so a large script result can be described
// to the model (and typed in the preamble's `results`) without showing all of it. Arrays of
// objects merge into one object type whose keys missing somewhere become optional.

type Shape =
  | { readonly kind: "primitive"; readonly name: "null" | "boolean" | "number" | "string" | "unknown" }
  | { readonly kind: "array"; readonly element: Shape[] }
  | { readonly kind: "object"; readonly fields: Map<string, { shape: Shape[]; count: number }>; readonly count: number };

const MAX_DEPTH = 8;
const MAX_KEYS = 60;
/**
 * Fields an object shape tracks: the first MAX_KEYS are shown, and one more says there are
 * others. Tracking every key cost time with the square of the keys: an array of 14 000 objects
 * with a key each held the capability host's thread for half a minute. The text is the same.
 */
const TRACKED_KEYS = MAX_KEYS + 1;

function shapeOf(value: unknown, depth: number): Shape {
  if (depth > MAX_DEPTH) return { kind: "primitive", name: "unknown" };
  if (value === null) return { kind: "primitive", name: "null" };
  if (typeof value === "boolean") return { kind: "primitive", name: "boolean" };
  if (typeof value === "number") return { kind: "primitive", name: "number" };
  if (typeof value === "string") return { kind: "primitive", name: "string" };
  if (Array.isArray(value)) {
    return { kind: "array", element: value.reduce<Shape[]>((acc, item) => addShape(acc, shapeOf(item, depth + 1)), []) };
  }
  if (typeof value === "object") {
    const fields = new Map<string, { shape: Shape[]; count: number }>();
    for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
      if (field === undefined) continue;
      if (fields.size === TRACKED_KEYS) break;
      fields.set(key, { shape: [shapeOf(field, depth + 1)], count: 1 });
    }
    return { kind: "object", fields, count: 1 };
  }
  return { kind: "primitive", name: "unknown" };
}

/** Adds a shape to a union, merging arrays with arrays and objects with objects. */
function addShape(union: Shape[], shape: Shape): Shape[] {
  const index = union.findIndex((s) => s.kind === shape.kind && (s.kind !== "primitive" || (shape.kind === "primitive" && s.name === shape.name)));
  if (index === -1) return [...union, shape];
  const existing = union[index] as Shape;
  const merged = mergeShapes(existing, shape);
  return union.map((s, i) => (i === index ? merged : s));
}

function mergeShapes(a: Shape, b: Shape): Shape {
  if (a.kind === "array" && b.kind === "array") {
    return { kind: "array", element: b.element.reduce((acc, s) => addShape(acc, s), a.element) };
  }
  if (a.kind === "object" && b.kind === "object") {
    const fields = new Map<string, { shape: Shape[]; count: number }>();
    for (const [key, field] of a.fields) fields.set(key, { shape: field.shape, count: field.count });
    for (const [key, field] of b.fields) {
      const prior = fields.get(key);
      if (prior === undefined && fields.size === TRACKED_KEYS) continue;
      fields.set(
        key,
        prior === undefined
          ? { shape: field.shape, count: field.count }
          : { shape: field.shape.reduce((acc, s) => addShape(acc, s), prior.shape), count: prior.count + field.count },
      );
    }
    return { kind: "object", fields, count: a.count + b.count };
  }
  return a;
}

function propertyName(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key);
}

function unionText(union: readonly Shape[], indent: string): string {
  if (union.length === 0) return "never";
  return union.map((s) => shapeText(s, indent)).join(" | ");
}

function shapeText(shape: Shape, indent: string): string {
  switch (shape.kind) {
    case "primitive":
      return shape.name;
    case "array": {
      if (shape.element.length === 0) return "unknown[]";
      const inner = unionText(shape.element, indent);
      return shape.element.length === 1 ? `${inner}[]` : `(${inner})[]`;
    }
    case "object": {
      if (shape.fields.size === 0) return "{}";
      const inner = `${indent}  `;
      const entries = [...shape.fields].slice(0, MAX_KEYS).map(([key, field]) => {
        const optional = field.count < shape.count ? "?" : "";
        return `${inner}${propertyName(key)}${optional}: ${unionText(field.shape, inner)};`;
      });
      if (shape.fields.size > MAX_KEYS) entries.push(`${inner}[key: string]: unknown;`);
      return `{\n${entries.join("\n")}\n${indent}}`;
    }
  }
}

/** The TypeScript type of a JSON value, e.g. `{ id: number; tags?: string[] }[]` (multi-line). */
export function inferJsonType(value: unknown): string {
  return shapeText(shapeOf(value, 0), "");
}
