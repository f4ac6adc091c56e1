// A stream's partition is the FNV-1a hash of its path's UTF-8 bytes: it decides the subject every
// record of the stream is stored under, so the hash may never change.

import { describe, expect, it } from "vitest";
import { fnv1a32, partitionOfPath } from "../src/partition.ts";

/** The definition, over the bytes TextEncoder makes. */
function reference(text: string): number {
  let hash = 0x811c9dc5;
  for (const b of new TextEncoder().encode(text)) {
    hash ^= b;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

describe("fnv1a32", () => {
  it("given the published test vectors, when hashed, then it gives FNV-1a's values", () => {
    expect(fnv1a32("")).toBe(0x811c9dc5);
    expect(fnv1a32("a")).toBe(0xe40c292c);
    expect(fnv1a32("foobar")).toBe(0xbf9cf968);
  });

  it("given paths of every UTF-8 length, surrogate pairs and lone surrogates, when hashed, then it equals the hash of TextEncoder's bytes", () => {
    const samples = ["/agents/web/demo", "/agents/é/ü", "/agents/日本/語", "/agents/🙂/x", "/agents/\ud800/lone-high", "/agents/\udc00/lone-low", "end-high\ud83d", "\ud83d\ude00\ud83d", "x".repeat(300)];
    let seed = 7;
    const random = () => ((seed = Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    for (let n = 0; n < 500; n++) samples.push(Array.from({ length: 1 + Math.floor(random() * 12) }, () => String.fromCharCode(Math.floor(random() * 0x10000))).join(""));
    for (const text of samples) expect(fnv1a32(text), JSON.stringify(text)).toBe(reference(text));
  });

  it("given a path, when its partition is taken, then it is the hash modulo the count", () => {
    expect(partitionOfPath("/agents/web/demo", 64)).toBe(reference("/agents/web/demo") % 64);
  });
});
