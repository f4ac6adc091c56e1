// Reads a request body with a hard byte cap (413 past it, checked against Content-Length up
// front and against the bytes actually received) and parses it as JSON (400 naming the
// problem when it is not).

import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors.ts";

export const DEFAULT_MAX_BODY_BYTES = 1_048_576;

export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const declared = Number(req.headers["content-length"] ?? "NaN");
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(declared, maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw tooLarge(size, maxBytes);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim().length === 0) {
    throw new GatewayError("invalid_request", "The request body is empty; send a JSON object.", { issues: [{ path: "body", message: "required" }] });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new GatewayError("invalid_request", `The request body is not valid JSON: ${(error as Error).message}.`, {
      issues: [{ path: "body", message: "malformed JSON" }],
    });
  }
}

function tooLarge(size: number, maxBytes: number): GatewayError {
  return new GatewayError("payload_too_large", `The request body (${size} bytes so far) exceeds the limit of ${maxBytes} bytes.`, { maxBytes });
}
