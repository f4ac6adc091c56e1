// A script's result is held to the contract's nesting bound (64 levels), as a call's arguments
// are. Deeper, it was stored inline past the bound (1 000 levels), overflowed the host's
// JSON.stringify and was settled as if the host had stopped (3 000), or failed its hand-over to
// the host's thread and was never reported, holding its sandbox until the deadline (12 000).

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HostFixture, settlementOf, startFixture, uniquePath } from "./harness.ts";

let fx: HostFixture;
beforeAll(async () => {
  fx = await startFixture({});
});
afterAll(async () => fx?.stop());

const nested = (levels: number) => [`let v: unknown = 1;`, `for (let i = 0; i < ${levels}; i++) v = [v];`, "return v;"];

describe("a script's result", () => {
  it.each([100, 1_000, 3_000, 12_000])("nested %i levels deep fails at once naming the bound", { timeout: 30_000 }, async (levels) => {
    const started = Date.now();
    const settlement = await settlementOf(fx, uniquePath(`deep-${levels}`), nested(levels));
    expect(settlement).toMatchObject({ status: "failed", error: expect.stringContaining("the script's result nests deeper than 64 levels of arrays and objects") });
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("nested 64 levels deep is returned", { timeout: 30_000 }, async () => {
    const settlement = await settlementOf(fx, uniquePath("deep-64"), nested(64));
    expect(settlement.status).toBe("succeeded");
  });
});
