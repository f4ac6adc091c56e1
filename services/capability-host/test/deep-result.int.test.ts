// A script's result is held to the contract's nesting bound (64 levels), as a call's arguments
// are. Deeper, it was stored inline past the bound (1 000 levels), overflowed the host's
// JSON.stringify and was settled as if the host had stopped (3 000), or failed its hand-over to
// the host's thread and was never reported, holding its sandbox until the deadline (12 000).

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_JSON_NODES, MAX_RESULT_CHARS } from "../src/sandbox/quickjs-sandbox.ts";
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

// And to a count of arrays, objects and keys (MAX_JSON_NODES), and to MAX_RESULT_CHARS: QuickJS's
// heap cap bounds the values, not what their text builds in the host. One object repeated, one
// object of a million keys, or any text handed back through a replaced Promise.prototype.then
// (8 million `{}` had taken the host to 6 GB and stopped it for 24 s, for every tenant; 2 million
// keys, 1.3 GB and 11 s), fails at once naming the bound.
describe("a script's result of many arrays, objects and keys", () => {
  /** A script that hands back `raw` (JavaScript building a string) as its result's JSON text. */
  const handsBack = (raw: string) => [
    `const RAW = ${raw};`,
    "const then = Promise.prototype.then;",
    "(Promise.prototype as any).then = function (f: any, r: any) { return then.call(this, () => (f ? f(RAW) : RAW), r); };",
    "return 1;",
  ];

  it("one object a million times fails naming the bound", { timeout: 30_000 }, async () => {
    const settlement = await settlementOf(fx, uniquePath("many-dag"), ["return new Array(1_000_000).fill({});"]);
    expect(settlement).toMatchObject({ status: "failed", error: expect.stringContaining(`the script's result holds 1000001 arrays, objects and keys, past the ${MAX_JSON_NODES} a result may hold`) });
  });

  it("any text handed back through a replaced Promise.then is held to the bounds before the host parses it", { timeout: 60_000 }, async () => {
    const rssBefore = process.memoryUsage().rss;
    const started = Date.now();
    const objects = await settlementOf(fx, uniquePath("many-then"), handsBack('"[" + "{},".repeat(6_000_000) + "{}]"'));
    expect(objects).toMatchObject({ status: "failed", error: expect.stringContaining(`the script's result holds 6000002 arrays, objects and keys, past the ${MAX_JSON_NODES}`) });
    const keys = await settlementOf(fx, uniquePath("many-keys"), handsBack('"{" + Array.from({ length: 1_000_000 }, (_, i) => `"k${i.toString(36)}":0`).join(",") + "}"'));
    expect(keys).toMatchObject({ status: "failed", error: expect.stringContaining(`the script's result holds 1000001 arrays, objects and keys, past the ${MAX_JSON_NODES}`) });
    const long = await settlementOf(fx, uniquePath("many-chars"), handsBack(`JSON.stringify("x".repeat(${MAX_RESULT_CHARS}))`));
    expect(long).toMatchObject({ status: "failed", error: expect.stringContaining(`the script's result is ${MAX_RESULT_CHARS + 2} characters as JSON, past the ${MAX_RESULT_CHARS} a result may be`) });
    expect(Date.now() - started).toBeLessThan(45_000);
    // Parsed, they had grown the host by gigabytes; refused, they cost the text's copy.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(1024 * 1024 * 1024);
  });

  it("at the bound it is returned, spilled to a file as any large result", { timeout: 30_000 }, async () => {
    const settlement = await settlementOf(fx, uniquePath("many-fit"), [`return new Array(${MAX_JSON_NODES - 1}).fill({});`]);
    expect(settlement).toMatchObject({ status: "succeeded", oversized: { kind: "omitted", serializedChars: 3 * (MAX_JSON_NODES - 1) + 1 } });
  });
});
