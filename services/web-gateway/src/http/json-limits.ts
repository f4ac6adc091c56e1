// JSON nesting is bounded before parsing: a body of a few thousand `[` parses fine but then
// overflows the stack of whatever walks it (validation, fold, serialisation) and used to give
// a 500.

import { DEFAULT_MAX_JSON_DEPTH, jsonDepthExceeds } from "@agentrt/contract";
import { GatewayError } from "../errors.ts";

// The rule itself is the contract's: the capability host holds scripts' itx values to it too.
export { DEFAULT_MAX_JSON_DEPTH, jsonDepthExceeds };

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
