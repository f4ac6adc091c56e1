// Reads a request body declared JSON (415 otherwise, before a byte is read: browser-guards.ts)
// with a hard byte cap (413 past it, checked against Content-Length up front and against the
// bytes actually received) and parses it as JSON (400 naming the problem when it is not, or
// when it nests deeper than the depth limit).

import { isUtf8 } from "node:buffer";
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
  const bytes = Buffer.concat(chunks);
  // Decoding would put U+FFFD where the bytes are not UTF-8, and the event stored would say
  // what its sender never sent (red-team): a 400 naming where instead.
  if (!isUtf8(bytes)) {
    const at = firstNonUtf8Byte(bytes);
    throw new GatewayError("invalid_request", `The request body is not UTF-8: the bytes at offset ${at} do not encode a character (JSON bodies are UTF-8).`, {
      issues: [{ path: "body", message: `not UTF-8 at byte ${at}` }],
    });
  }
  const text = bytes.toString("utf8");
  if (text.trim().length === 0) {
    throw new GatewayError("invalid_request", "The request body is empty; send a JSON object.", { issues: [{ path: "body", message: "required" }] });
  }
  return parseJsonBounded(text, maxDepth, "The request body");
}

function tooLarge(size: number, maxBytes: number): GatewayError {
  return new GatewayError("payload_too_large", `The request body (${size} bytes so far) exceeds the limit of ${maxBytes} bytes.`, { maxBytes });
}

/**
 * Where bytes stop being UTF-8 (for a body `isUtf8` refused): the offset of the first byte that
 * does not begin, or continue, a well-formed sequence (no overlong forms, no surrogates, nothing
 * past U+10FFFF), as a UTF-8 decoder would find it.
 */
export function firstNonUtf8Byte(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; ) {
    const lead = bytes[i] as number;
    if (lead < 0x80) {
      i++;
      continue;
    }
    // How many continuation bytes follow, and the range of the first (the rest are 0x80–0xBF).
    const [count, low, high] =
      lead >= 0xc2 && lead <= 0xdf ? [1, 0x80, 0xbf]
      : lead === 0xe0 ? [2, 0xa0, 0xbf]
      : lead === 0xed ? [2, 0x80, 0x9f]
      : lead >= 0xe1 && lead <= 0xef ? [2, 0x80, 0xbf]
      : lead === 0xf0 ? [3, 0x90, 0xbf]
      : lead === 0xf4 ? [3, 0x80, 0x8f]
      : lead >= 0xf1 && lead <= 0xf3 ? [3, 0x80, 0xbf]
      : [0, 0, 0];
    if (count === 0) return i;
    for (let k = 1; k <= count; k++) {
      const next = bytes[i + k];
      if (next === undefined || next < (k === 1 ? low : 0x80) || next > (k === 1 ? high : 0xbf)) return i;
    }
    i += count + 1;
  }
  return bytes.length;
}
