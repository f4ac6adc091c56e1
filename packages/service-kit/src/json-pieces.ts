// JSON text in pieces, for values that grow with an agent (its folded state, what the model saw).
// `JSON.stringify` makes the whole text in one synchronous step: for a state of 150 MB that held
// the event loop for 1.5 s, every other agent and client of the process waiting, and past V8's
// longest string (2^29 − 24 characters) it threw. `jsonPieces` gives the same text in pieces of
// about `pieceChars`; `writeJsonPieces` writes them with backpressure, letting the event loop turn
// between pieces; `jsonWithin` stops as soon as the text passes a size, so learning that a value
// is too large to store costs that size, not the value's.

import { setImmediate as nextTurn } from "node:timers/promises";
import type { Writable } from "node:stream";

/** About this many characters per piece: one small write, one short step of work. */
export const DEFAULT_PIECE_CHARS = 64 * 1024;

/**
 * The text `JSON.stringify(value)` gives (`toJSON`, omitted `undefined`s and functions, `null`
 * for those in arrays and for non-finite numbers), in pieces of about `pieceChars`; a long string
 * is cut between pieces, never inside a surrogate pair. Throws as `JSON.stringify` does on a
 * cycle or a BigInt, and on a value with no JSON text (`undefined` at the top).
 */
export function* jsonPieces(value: unknown, pieceChars: number = DEFAULT_PIECE_CHARS): Generator<string, void, undefined> {
  const out = new PieceBuffer(pieceChars);
  const ancestors = new Set<object>();
  const top = jsonable(value, "");
  if (top === undefined) throw new TypeError("The value has no JSON text (undefined, a function or a symbol).");
  yield* writeValue(top, out, ancestors);
  const rest = out.take();
  if (rest !== "") yield rest;
}

/**
 * `value` as JSON when its UTF-8 text is at most `maxBytes`; otherwise undefined, found out after
 * writing at most `maxBytes` and one piece of it, whatever the value's size.
 */
export function jsonWithin(value: unknown, maxBytes: number, pieceChars: number = DEFAULT_PIECE_CHARS): string | undefined {
  const parts: string[] = [];
  let bytes = 0;
  for (const piece of jsonPieces(value, pieceChars)) {
    bytes += Buffer.byteLength(piece);
    if (bytes > maxBytes) return undefined;
    parts.push(piece);
  }
  return parts.join("");
}

/**
 * Writes `value` as JSON to `sink` piece by piece, waiting for `drain` when the sink is full and
 * for the next event-loop turn between pieces. Stops, writing nothing more, once the sink is
 * destroyed (a client that went away). Does not end the sink.
 */
export async function writeJsonPieces(sink: Writable, pieces: Iterable<string>): Promise<void> {
  for (const piece of pieces) {
    if (sink.destroyed) return;
    if (!sink.write(piece)) await drained(sink);
    await nextTurn();
  }
}

function drained(sink: Writable): Promise<void> {
  if (sink.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      sink.off("drain", done).off("close", done);
      resolve();
    };
    sink.on("drain", done).on("close", done);
  });
}

class PieceBuffer {
  private parts: string[] = [];
  private chars = 0;

  constructor(readonly pieceChars: number) {
    if (!Number.isInteger(pieceChars) || pieceChars < 16) throw new RangeError(`pieceChars must be an integer of at least 16, got ${pieceChars}`);
  }

  add(text: string): void {
    this.parts.push(text);
    this.chars += text.length;
  }

  get full(): boolean {
    return this.chars >= this.pieceChars;
  }

  take(): string {
    const text = this.parts.join("");
    this.parts = [];
    this.chars = 0;
    return text;
  }
}

/** What JSON.stringify writes for a member named `key`: after `toJSON`, boxed primitives unboxed; undefined for none. */
function jsonable(value: unknown, key: string): unknown {
  if (typeof value === "object" && value !== null && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    value = (value as { toJSON(key: string): unknown }).toJSON(key);
  }
  if (value instanceof Number || value instanceof String || value instanceof Boolean) value = value.valueOf();
  if (value === undefined || typeof value === "function" || typeof value === "symbol") return undefined;
  return value;
}

function* writeValue(value: unknown, out: PieceBuffer, ancestors: Set<object>): Generator<string, void, undefined> {
  if (typeof value === "string") {
    yield* writeString(value, out);
  } else if (typeof value !== "object" || value === null) {
    // Numbers (non-finite → null), booleans, null; a BigInt throws here as it does natively.
    out.add(JSON.stringify(value));
  } else {
    if (ancestors.has(value)) throw new TypeError("Converting circular structure to JSON");
    ancestors.add(value);
    if (Array.isArray(value)) {
      out.add("[");
      for (let i = 0; i < value.length; i++) {
        if (i > 0) out.add(",");
        const item = jsonable(value[i], String(i));
        if (item === undefined) out.add("null");
        else yield* writeValue(item, out, ancestors);
        if (out.full) yield out.take();
      }
      out.add("]");
    } else {
      out.add("{");
      let first = true;
      for (const key of Object.keys(value)) {
        const member = jsonable((value as Record<string, unknown>)[key], key);
        if (member === undefined) continue;
        if (!first) out.add(",");
        first = false;
        yield* writeString(key, out);
        out.add(":");
        yield* writeValue(member, out, ancestors);
        if (out.full) yield out.take();
      }
      out.add("}");
    }
    ancestors.delete(value);
  }
  if (out.full) yield out.take();
}

/** A JSON string literal, cut into pieces when long; a cut never splits a surrogate pair. */
function* writeString(text: string, out: PieceBuffer): Generator<string, void, undefined> {
  if (text.length <= out.pieceChars) {
    out.add(JSON.stringify(text));
    return;
  }
  out.add('"');
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + out.pieceChars, text.length);
    const last = text.charCodeAt(end - 1);
    // A high surrogate at the cut would be escaped alone (\udxxx): keep it with its pair.
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    out.add(JSON.stringify(text.slice(start, end)).slice(1, -1));
    start = end;
    if (out.full) yield out.take();
  }
  out.add('"');
}
