// Given a retry number, when the provider computes its next registration delay, then it grows
// exponentially, never exceeds the cap, and is jittered within [half, whole) of the ceiling.

import { describe, expect, it } from "vitest";
import { backoffDelayMs } from "../src/index.ts";

const policy = { initialMs: 200, maxMs: 5_000 };

describe("registration backoff", () => {
  it("doubles from the initial delay (at the top of the jitter range)", () => {
    const top = () => 0.999_999;
    expect([1, 2, 3, 4].map((n) => backoffDelayMs(n, policy, top))).toEqual([200, 400, 800, 1_600]);
  });

  it("never exceeds the cap, however many retries", () => {
    for (const attempt of [6, 10, 50, 1_000]) expect(backoffDelayMs(attempt, policy, () => 0.999_999)).toBe(5_000);
  });

  it("jitters between half and all of the ceiling", () => {
    expect(backoffDelayMs(3, policy, () => 0)).toBe(400);
    expect(backoffDelayMs(3, policy, () => 0.5)).toBe(600);
    expect(backoffDelayMs(20, policy, () => 0)).toBe(2_500);
  });

  it("treats the first retry as attempt 1 and clamps nonsense input", () => {
    expect(backoffDelayMs(0, policy, () => 0.999_999)).toBe(200);
    expect(backoffDelayMs(1, policy, () => 7)).toBe(200);
  });
});
