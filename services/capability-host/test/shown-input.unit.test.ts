// How itx.kv and itx.files quote a script's bad key or path in their errors: one rule for both.

import { describe, expect, it } from "vitest";
import { shownInput } from "../src/itx/agent-storage.ts";

describe("shownInput", () => {
  it("given a short string or a non-string, when quoted, then it is its JSON", () => {
    expect(shownInput("notes/a.md")).toBe('"notes/a.md"');
    expect(shownInput(42)).toBe("42");
    expect(shownInput(undefined)).toBe("undefined");
    expect(shownInput({ a: 1 })).toBe('{"a":1}');
  });

  it("given a string past 80 characters, when quoted, then it is cut to 80 with the ellipsis inside its quotes", () => {
    const long = `${"a".repeat(79)}bc${"z".repeat(500)}`;
    expect(shownInput(long)).toBe(`"${"a".repeat(79)}b…"`);
    expect(shownInput("x".repeat(80))).toBe(`"${"x".repeat(80)}"`);
  });
});
