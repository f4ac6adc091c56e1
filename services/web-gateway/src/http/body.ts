// Reads a request body declared JSON (415 otherwise, before a byte is read: browser-guards.ts)
// with a hard byte cap (413 past it, checked against Content-Length up front and against the
// bytes actually received) and parses it as JSON (400 naming the problem when it is not, or
// when it nests deeper than the depth limit).

import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors.ts";
import { assertJsonBody } from "./browser-guards.ts";
import { DEFAULT_MAX_JSON_DEPTH, parseJsonBounded } from "./json-limits.ts";

export const DEFAULT_MAX_BODY_BYTES = 1_048_576;

export async function readJsonBody(req: IncomingMessage, maxBytes: number, maxDepth: number = DEFAULT_MAX_JSON_DEPTH): Promise<unknown> {
  assertJsonBody(req.headers);
  const declared = Number(req.headers["content-length"] ?? "NaN");
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(declared, maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw tooLarge(size, maxBytes);
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    // The client reset or closed the connection mid-upload: its fault, and nobody hears the answer.
    throw new GatewayError("invalid_request", "The request body was cut off (the client closed the connection).", {
      issues: [{ path: "body", message: "incomplete" }],
    });
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim().length === 0) {
    throw new GatewayError("invalid_request", "The request body is empty; send a JSON object.", { issues: [{ path: "body", message: "required" }] });
  }
  return parseJsonBounded(text, maxDepth, "The request body");
}

function tooLarge(size: number, maxBytes: number): GatewayError {
  return new GatewayError("payload_too_large", `The request body (${size} bytes so far) exceeds the limit of ${maxBytes} bytes.`, { maxBytes });
}
