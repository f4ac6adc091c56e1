// JSON nesting is bounded before parsing: a body of a few thousand `[` parses fine but then
// overflows the stack of whatever walks it (validation, fold, serialisation) and used to give
// a 500.

import { DEFAULT_MAX_JSON_DEPTH, duplicateKeyPath, formatValuePath, illFormedTextAt, jsonDepthExceeds, jsonKeyCount, jsonShapeOf } from "@agentrt/contract";
import { GatewayError } from "../errors.ts";

// The rule itself is the contract's: the capability host holds scripts' itx values to it too.
export { DEFAULT_MAX_JSON_DEPTH, jsonDepthExceeds };

/**
 * JSON.parse with the depth bound: 400 naming the field and the limit, or the parse error, or
 * a key given twice in one object.
 */
export function parseJsonBounded(text: string, maxDepth: number, field: string): unknown {
  const shape = jsonShapeOf(text, maxDepth);
  if (shape.depth > maxDepth) {
    throw new GatewayError("invalid_request", `${field} nests JSON deeper than the limit of ${maxDepth} levels (MAX_JSON_DEPTH).`, {
      maxDepth,
      issues: [{ path: field, message: `nesting deeper than ${maxDepth} levels` }],
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    throw new GatewayError("invalid_request", `${field} is not valid JSON: ${(error as Error).message}.`, {
      issues: [{ path: field, message: "malformed JSON" }],
    });
  }
  // Fewer keys parsed than the text holds: one object names a key twice, and JSON.parse kept the
  // last silently (a proxy or a log that reads the first sees another request). Most bodies
  // have none, and are scanned for where only when the counts differ.
  const duplicate = shape.keys === jsonKeyCount(value) ? undefined : duplicateKeyPath(text);
  if (duplicate !== undefined) {
    const path = formatValuePath("", duplicate);
    throw new GatewayError("invalid_request", `${field} gives the key ${JSON.stringify(duplicate.at(-1))} twice in one object (at ${path}); send each key once.`, {
      issues: [{ path, message: "a key given twice in one object" }],
    });
  }
  // A surrogate can only come from a `\uD800`–`\uDFFF` escape (decoded UTF-8 holds none): most
  // bodies have none, and are not walked. The rule is the contract's, for every writer.
  const where = SURROGATE_ESCAPE.test(text) ? illFormedTextAt(value) : undefined;
  if (where !== undefined) {
    const path = where.length === 0 ? field : formatValuePath("", where);
    throw new GatewayError("invalid_request", `${field} holds a string that is not well-formed Unicode (a lone surrogate such as \\ud800) at ${path}; send whole characters.`, {
      issues: [{ path, message: "not well-formed Unicode (a lone surrogate)" }],
    });
  }
  return value;
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
