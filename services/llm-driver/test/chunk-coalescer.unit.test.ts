import { describe, expect, it } from "vitest";
import { CHUNK_MAX_BYTES, ChunkCoalescer } from "../src/chunk-coalescer.ts";

describe("chunk coalescer", () => {
  it("given a slow first token, when it arrives after the window, then it goes out at once", () => {
    const c = new ChunkCoalescer({ startedAtMs: 1000 });
    expect(c.push({ n: 0 }, 1400)).toMatchObject([{ chunks: [{ n: 0 }], sequence: 0 }]);
  });

  it("given chunks inside the window, when time passes, then they flush together at the window's end", () => {
    const c = new ChunkCoalescer({ startedAtMs: 1000 });
    expect(c.push({ n: 0 }, 1010)).toEqual([]);
    expect(c.push({ n: 1 }, 1100)).toEqual([]);
    expect(c.nextDueAtMs()).toBe(1150);
    expect(c.tick(1149)).toBeNull();
    expect(c.tick(1150)).toMatchObject({ chunks: [{ n: 0 }, { n: 1 }], sequence: 0 });
    // The next window is anchored at that flush.
    expect(c.push({ n: 2 }, 1200)).toEqual([]);
    expect(c.nextDueAtMs()).toBe(1300);
    expect(c.push({ n: 3 }, 1300)).toMatchObject([{ chunks: [{ n: 2 }, { n: 3 }], sequence: 1 }]);
    expect(c.nextDueAtMs()).toBeNull();
  });

  it("given an empty buffer, when the window passes, then nothing flushes and the next chunk goes at once", () => {
    const c = new ChunkCoalescer({ startedAtMs: 0 });
    expect(c.tick(500)).toBeNull();
    expect(c.push("x", 501)).toMatchObject([{ chunks: ["x"], sequence: 0 }]);
  });

  it("given the byte cap, when the buffer reaches it, then it flushes without waiting and never exceeds it", () => {
    const c = new ChunkCoalescer({ startedAtMs: 0 });
    const big = "a".repeat(30_000); // 30 002 bytes as JSON
    expect(c.push(big, 1)).toEqual([]);
    expect(c.push(big, 2)).toEqual([]);
    // The third would make 90 006 bytes: the first two go out, the third waits.
    const flushed = c.push(big, 3);
    expect(flushed).toMatchObject([{ chunks: [big, big], sequence: 0 }]);
    expect(JSON.stringify(flushed[0]?.chunks).length).toBeLessThanOrEqual(CHUNK_MAX_BYTES);
    expect(c.finish(4)).toMatchObject({ chunks: [big], sequence: 1 });
  });

  it("reports the encoded size of each flush", () => {
    const c = new ChunkCoalescer({ startedAtMs: 0 });
    expect(c.push({ a: "é" }, 500)[0]?.bytes).toBe(Buffer.byteLength('{"a":"é"}'));
  });

  it("given a buffer that reaches the cap exactly, then it flushes on that push", () => {
    const c = new ChunkCoalescer({ startedAtMs: 0, maxBytes: 10 });
    expect(c.push("abcdefgh", 1)).toMatchObject([{ chunks: ["abcdefgh"], sequence: 0 }]); // 10 bytes with quotes
  });

  it("given buffered chunks, when finishing, then a final flush carries them with the next sequence", () => {
    const c = new ChunkCoalescer({ startedAtMs: 0 });
    c.push("a", 200); // flushed at once (window passed), sequence 0
    c.push("b", 210);
    c.push("c", 220);
    expect(c.finish(230)).toMatchObject({ chunks: ["b", "c"], sequence: 1 });
    expect(c.finish(231)).toBeNull();
    expect(c.flushedCount).toBe(2);
  });

  it("keeps provider order across many flushes", () => {
    const c = new ChunkCoalescer({ startedAtMs: 0 });
    const out: unknown[] = [];
    const sequences: number[] = [];
    for (let i = 0; i < 100; i += 1) {
      for (const f of c.push(i, i * 7)) {
        out.push(...f.chunks);
        sequences.push(f.sequence);
      }
    }
    const last = c.finish(1000);
    if (last) {
      out.push(...last.chunks);
      sequences.push(last.sequence);
    }
    expect(out).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(sequences).toEqual(sequences.map((_, i) => i));
  });
});
