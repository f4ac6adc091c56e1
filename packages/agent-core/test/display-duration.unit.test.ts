// Given a script's measured duration, when it is formatted (for the model, the web UI and the
// CLI alike), then it reads as codemode.md specifies (the table, plus the edges of each range).
import { describe, expect, it } from "vitest";
import { elapsedMs, formatDuration } from "../src/display/index.ts";

describe("formatDuration", () => {
  it.each([
    [0, "0ms"],
    [999, "999ms"],
    [1000, "1s"],
    [1234, "1.2s"],
    [1800, "1.8s"],
    [2000, "2s"],
    [2500, "2.5s"],
    [119_949, "119.9s"],
    [125_000, "2m 5s"],
    [179_700, "3m"],
  ])("the documented table: %d ms → %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([
    [1, "1ms"],
    [999.4, "999ms"],
    [1099, "1s"],
    [1999, "1.9s"],
    [119_999, "119.9s"],
    [120_000, "2m"],
    [120_499, "2m"],
    [120_500, "2m 1s"],
    [3_600_000, "60m"],
    [3_661_000, "61m 1s"],
  ])("range edges: %d ms → %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it("never shows a negative or non-finite duration", () => {
    expect(formatDuration(-5)).toBe("0ms");
    expect(formatDuration(Number.NaN)).toBe("0ms");
  });
});

describe("elapsedMs", () => {
  it("is the difference of two ISO timestamps, at least 0", () => {
    expect(elapsedMs("2026-08-24T16:51:14.200Z", "2026-08-24T16:51:16.000Z")).toBe(1800);
    expect(elapsedMs("2026-08-24T16:51:16.000Z", "2026-08-24T16:51:14.200Z")).toBe(0);
  });
});
