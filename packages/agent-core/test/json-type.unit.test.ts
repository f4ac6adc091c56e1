// inferJsonType: the type text of a large script result (the preamble's `results` and the
// rendered result show it). An object shows its first 60 keys and then an index signature; only
// those 61 are tracked, so an array of many objects with keys of their own costs time in
// proportion to its size, not to the square of its keys.

import { describe, expect, it } from "vitest";
import { inferJsonType } from "../src/codemode/json-type.ts";

const shown = (keys: readonly string[], optional: (key: string) => boolean, more: boolean) =>
  `{\n${keys.map((k) => `  ${k}${optional(k) ? "?" : ""}: number;`).join("\n")}${more ? "\n  [key: string]: unknown;" : ""}\n}[]`;
const names = (n: number) => Array.from({ length: n }, (_, i) => `k${i}`);

describe("inferJsonType", () => {
  it("given objects that each have a key of their own, when typed, then the first 60 keys show as optional and an index signature says there are more", () => {
    const value = names(70).map((k, i) => ({ [k]: i }));
    expect(inferJsonType(value)).toBe(shown(names(60), () => true, true));
  });

  it("given keys present in every object past the 61st key of the first, when typed, then which are optional is still counted over all objects", () => {
    const first = Object.fromEntries(names(80).map((k, i) => [k, i]));
    // Every later object has k0..k9 only: k10.. are optional, k0..k9 are not.
    const rest = Array.from({ length: 5 }, () => Object.fromEntries(names(10).map((k, i) => [k, i])));
    expect(inferJsonType([first, ...rest])).toBe(shown(names(60), (k) => Number(k.slice(1)) >= 10, true));
  });

  it("given exactly 60 keys, when typed, then there is no index signature", () => {
    const value = [Object.fromEntries(names(60).map((k, i) => [k, i]))];
    expect(inferJsonType(value)).toBe(shown(names(60), () => false, false));
  });

  it("given 20 000 objects with a key each (a script's result of ~300 KB), when typed, then it is the same text, in proportion to the size", () => {
    // Tracking every key this took minutes (14 000 such objects held the host's thread for 33 s).
    const value = names(20_000).map((k, i) => ({ [k]: i }));
    expect(inferJsonType(value)).toBe(shown(names(60), () => true, true));
  });
});
