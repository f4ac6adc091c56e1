// JSON in pieces (json-pieces.ts): the same text JSON.stringify gives, in bounded pieces, past
// the longest string V8 can hold, and written with the event loop turning between pieces.
import { PassThrough } from "node:stream";
import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { jsonPieces, jsonWithin, writeJsonPieces } from "../src/json-pieces.ts";

const PIECE = 64;
const whole = (value: unknown, pieceChars = PIECE) => [...jsonPieces(value, pieceChars)].join("");

const corpus: Record<string, unknown> = {
  "a number, a boolean, null": [1, -0, 1.5e300, true, false, null],
  "non-finite numbers": { nan: Number.NaN, inf: Infinity, neg: -Infinity },
  "undefined, functions and symbols": { u: undefined, f: () => 1, s: Symbol("x"), kept: 1, list: [undefined, () => 1, Symbol("y"), 2] },
  "empty containers": { a: [], o: {}, nested: [[], [{}]], s: "" },
  "escapes across cuts": { text: `"quote" \\ back\nline\ttab\u0000\u001f\u2028 `.repeat(40) },
  "surrogate pairs across every cut": { text: "a😀".repeat(500), odd: "😀".repeat(333) + "b" },
  "a lone surrogate": { text: "x".repeat(63) + "\ud800" + "y".repeat(100) + "\udc00" },
  "keys that need escaping": { 'a"b': 1, "\n": 2, "😀": 3, __proto__x: 4 },
  toJSON: { when: new Date(0), custom: { toJSON: (key: string) => `key:${key}` }, inArray: [{ toJSON: () => undefined }] },
  "boxed primitives": [new Number(3), new String("s"), new Boolean(false)],
  "sparse array": [1, , 3], // eslint-disable-line no-sparse-arrays
  "a state-like shape": {
    streamPath: "/agents/a",
    contextItems: Array.from({ length: 50 }, (_, i) => ({ kind: "message", role: i % 2 ? "assistant" : "user", content: `m${i} `.repeat(i * 7), offset: i })),
    paused: null,
  },
  "a bare string": "just a string",
  "a bare number": 42,
};

describe("jsonPieces", () => {
  for (const [name, value] of Object.entries(corpus)) {
    it(`given ${name}, when written in pieces, then the text is JSON.stringify's`, () => {
      for (const pieceChars of [16, PIECE, 1000]) expect(whole(value, pieceChars)).toBe(JSON.stringify(value));
    });
  }

  it("given a large value, when written, then every piece is about pieceChars: one step of work each", () => {
    const value = { items: Array.from({ length: 300 }, (_, i) => ({ i, text: "t".repeat(i * 11) })), long: "L".repeat(10_000) };
    const pieces = [...jsonPieces(value, 1024)];
    expect(pieces.join("")).toBe(JSON.stringify(value));
    expect(pieces.length).toBeGreaterThan(JSON.stringify(value).length / 2048);
    // A piece ends once it reaches pieceChars, so it is at most that plus one small step.
    for (const piece of pieces) expect(piece.length).toBeLessThan(1024 * 3);
  });

  // V8's longest string on 64-bit: JSON.stringify throws a RangeError for a longer text.
  const MAX_STRING_CHARS = 2 ** 29 - 24;

  it("given a value whose JSON is longer than V8's longest string, when written, then it comes whole in pieces", { timeout: 30_000 }, () => {
    const text = "x".repeat(MAX_STRING_CHARS);
    const value = { text, more: "y" };
    let chars = 0;
    let pieces = 0;
    let head = "";
    let tail = "";
    for (const piece of jsonPieces(value)) {
      if (pieces === 0) head = piece.slice(0, 10);
      tail = (tail + piece).slice(-16);
      chars += piece.length;
      pieces++;
    }
    expect(chars).toBe(text.length + '{"text":"","more":"y"}'.length);
    expect(chars).toBeGreaterThan(MAX_STRING_CHARS);
    expect(head).toBe('{"text":"x');
    expect(tail).toBe('xxx","more":"y"}');
    expect(pieces).toBeGreaterThan(8000);
  });

  it("given a cycle or a BigInt, when written, then it throws the TypeError JSON.stringify throws", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { back: cyclic };
    expect(() => whole(cyclic)).toThrow(/circular/);
    expect(() => whole({ n: 10n })).toThrow(TypeError);
    expect(() => whole(undefined)).toThrow(TypeError);
    // The same object twice, not inside itself, is no cycle.
    const shared = { s: 1 };
    expect(whole({ a: shared, b: [shared, shared] })).toBe(JSON.stringify({ a: shared, b: [shared, shared] }));
  });
});

describe("jsonWithin", () => {
  it("given a value whose JSON fits, when written within a size, then it is JSON.stringify's text, at the size exactly too", () => {
    const value = { a: "é😀", list: [1, 2, 3] };
    const bytes = Buffer.byteLength(JSON.stringify(value));
    expect(jsonWithin(value, bytes)).toBe(JSON.stringify(value));
    expect(jsonWithin(value, bytes - 1)).toBeUndefined();
  });

  it("given a value far larger than the size, when written within it, then undefined, having read about the size of it", () => {
    let itemsRead = 0;
    const items = new Proxy(
      Array.from({ length: 10_000 }, (_, i) => ({ i, text: "t".repeat(1_000) })),
      {
        get(target, key, receiver) {
          if (typeof key === "string" && /^\d+$/.test(key)) itemsRead++;
          return Reflect.get(target, key, receiver);
        },
      },
    );
    expect(jsonWithin({ items }, 100_000, 4_096)).toBeUndefined();
    // 100 kB is about 100 items; one more piece at most beyond it.
    expect(itemsRead).toBeGreaterThan(90);
    expect(itemsRead).toBeLessThan(110);
  });
});

describe("writeJsonPieces", () => {
  it("given a sink read as it goes, when a value of many pieces is written, then the event loop turns between every two pieces", async () => {
    const value = { items: Array.from({ length: 200 }, (_, i) => "v".repeat(100 + i)) };
    const sink = new PassThrough();
    const chunks: string[] = [];
    const order: string[] = [];
    sink.on("data", (chunk: Buffer) => {
      chunks.push(chunk.toString());
      order.push("piece");
    });
    let ticking = true;
    const ticker = (async () => {
      while (ticking) {
        order.push("turn");
        await nextTurn();
      }
    })();
    await writeJsonPieces(sink, jsonPieces(value, 256));
    ticking = false;
    await ticker;
    expect(chunks.join("")).toBe(JSON.stringify(value));
    const pieceAt = order.flatMap((what, i) => (what === "piece" ? [i] : []));
    expect(pieceAt.length).toBeGreaterThan(50);
    // Between any two pieces another task ran: no piece followed another in the same turn.
    for (let k = 1; k < pieceAt.length; k++) expect(order.slice(pieceAt[k - 1], pieceAt[k])).toContain("turn");
  });

  it("given a sink that stops reading, when written, then it waits for drain: at most a few pieces are buffered", async () => {
    const sink = new PassThrough({ highWaterMark: 1024 });
    const value = { items: Array.from({ length: 100 }, () => "w".repeat(1000)) };
    const allPieces = [...jsonPieces(value, 1024)].length;
    let produced = 0;
    const counted = (function* () {
      for (const piece of jsonPieces(value, 1024)) {
        produced++;
        yield piece;
      }
    })();
    const writing = writeJsonPieces(sink, counted);
    for (let i = 0; i < 20; i++) await nextTurn();
    // Nothing reads: the writer stops at the sink's high-water mark instead of building the rest.
    expect(produced).toBeLessThan(5);
    const text: string[] = [];
    sink.on("data", (chunk: Buffer) => text.push(chunk.toString()));
    await writing;
    expect(text.join("")).toBe(JSON.stringify(value));
    expect(produced).toBe(allPieces);
    expect(allPieces).toBeGreaterThan(40);
  });

  it("given a sink destroyed part way (the client went away), when written, then nothing more is built or written", async () => {
    const sink = new PassThrough();
    let produced = 0;
    const counted = (function* () {
      for (const piece of jsonPieces({ items: Array.from({ length: 100 }, () => "z".repeat(1000)) }, 1024)) {
        produced++;
        if (produced === 10) sink.destroy();
        yield piece;
      }
    })();
    sink.resume();
    await writeJsonPieces(sink, counted);
    expect(produced).toBe(10);
  });
});
