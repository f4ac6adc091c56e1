// Given a model's event stream cut into network chunks anywhere, when it is re-framed for the
// `openai` client, then the client gets the same events, one a chunk, without the comments and
// empty events it would have dropped itself; an event past its bounds is refused by name.

import { describe, expect, it } from "vitest";
import { MAX_MODEL_CHUNK_DEPTH, MAX_MODEL_EVENT_BYTES, SseFramer, SseFramingError } from "../src/sse-framing.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (chunks: readonly Uint8Array[]) => chunks.map((c) => new TextDecoder().decode(c));

/** The events of an SSE text as the protocol defines them: fields by line, a blank line ends one, comments and empty events dropped. */
function referenceEvents(source: string): string[] {
  const events: string[] = [];
  let lines: string[] = [];
  for (const line of source.split(/\r\n|\r|\n/)) {
    if (line === "") {
      if (lines.length > 0) events.push(`${lines.join("\n")}\n\n`);
      lines = [];
    } else if (!line.startsWith(":")) lines.push(line);
  }
  if (lines.length > 0) events.push(`${lines.join("\n")}\n\n`);
  return events;
}

function frame(source: string, cuts: readonly number[]): string[] {
  const framer = new SseFramer();
  const all = bytes(source);
  const out: Uint8Array[] = [];
  let at = 0;
  for (const cut of [...cuts, all.length]) {
    out.push(...framer.push(all.subarray(at, cut)));
    at = cut;
  }
  return text([...out, ...framer.end()]);
}

const STREAM = [
  ": keep-alive comment\r\n",
  'data: {"choices":[{"delta":{"content":"Hé"}}]}\r\n\r\n',
  "\n\n\r\r",
  "event: response.output_text.delta\n",
  'data: {"delta":"llo: \\"x\\r\\n\\""}\n',
  "id: 7\n\n",
  'data: {"a":1}\r',
  'data: {"b":2}\r\r',
  "data: [DONE]",
].join("");

describe("re-framing a model's event stream", () => {
  it("given the stream cut at every byte, or in random places, when framed, then each event comes whole and alone, as a decoder reads the source", () => {
    const expected = referenceEvents(STREAM);
    expect(expected).toHaveLength(4);
    const length = bytes(STREAM).length;
    expect(frame(STREAM, [])).toEqual(expected);
    expect(frame(STREAM, Array.from({ length: length - 1 }, (_, i) => i + 1))).toEqual(expected);
    let seed = 11;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) >>> 8;
    for (let round = 0; round < 300; round++) {
      const cuts = [...new Set(Array.from({ length: 1 + (next() % 8) }, () => next() % length))].sort((a, b) => a - b);
      expect(frame(STREAM, cuts), `cuts ${cuts.join(",")}`).toEqual(expected);
    }
  });

  it("given floods of blank lines, bare CRs, comments and empty events, when framed, then nothing reaches the client", () => {
    const framer = new SseFramer();
    for (const flood of ["\n".repeat(100_000), "\r".repeat(100_000), ":\n\n".repeat(30_000), `: ${"c".repeat(1_000)}\n`.repeat(1_000)]) {
      expect(framer.push(bytes(flood))).toEqual([]);
    }
    expect(framer.end()).toEqual([]);
  });

  it("given an event that never ends, when it passes the bound, then it is refused by name; a long event within it passes", () => {
    const framer = new SseFramer();
    const line = bytes(`data: ${"x".repeat(1_000)}\n`);
    let refused: unknown;
    try {
      for (let i = 0; i < (MAX_MODEL_EVENT_BYTES / line.length) * 2; i++) expect(framer.push(line)).toEqual([]);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(SseFramingError);
    expect((refused as Error).message).toBe(`the model endpoint sent an event of more than ${MAX_MODEL_EVENT_BYTES} bytes`);
    const long = `data: "${"y".repeat(MAX_MODEL_EVENT_BYTES - 100)}"\n\n`;
    expect(text(new SseFramer().push(bytes(long)))).toEqual([long]);
  });

  it("given a chunk nesting JSON past the bound, when framed, then it is refused by name; brackets in strings do not count", () => {
    const deep = (levels: number) => `data: {"x":${"[".repeat(levels)}${"]".repeat(levels)}}\n\n`;
    expect(() => new SseFramer().push(bytes(deep(MAX_MODEL_CHUNK_DEPTH)))).toThrow(`the model endpoint sent a chunk whose JSON nests deeper than ${MAX_MODEL_CHUNK_DEPTH} levels`);
    expect(text(new SseFramer().push(bytes(deep(MAX_MODEL_CHUNK_DEPTH - 1))))).toHaveLength(1);
    const inString = `data: {"x":"${"[".repeat(5_000)}\\"${"{".repeat(5_000)}"}\n\n`;
    expect(text(new SseFramer().push(bytes(inString)))).toEqual([inString]);
  });
});
