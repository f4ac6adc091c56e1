// A script's result is kept inline only while its settlement event can hold it, measured as the
// event holds it: escaped JSON in UTF-8 bytes (red-team rt3 F5). Counted in characters, 250 000
// "\u0001" passed the 256 000 bound, the settlement (1.5 MB, each escaped to 6 bytes) was refused
// by the store, the work item was terminated, and the script never settled. And a settlement the
// store still refuses settles the script failed, saying why, instead of leaving it unsettled.

import { jsonBytes } from "@agentrt/streams";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HostFixture, settlementOf, startFixture, uniquePath } from "./harness.ts";

describe("a result whose escaped JSON is larger than its characters", () => {
  let fx: HostFixture;
  beforeAll(async () => {
    fx = await startFixture();
  });
  afterAll(async () => fx?.stop());

  it("settles 250 000 control characters (1.5 MB of escaped JSON) as oversized, its preview and size in the settlement", async () => {
    const settlement = await settlementOf(fx, uniquePath("escapes"), 'return "\\u0001".repeat(250000);');
    expect(settlement).toMatchObject({ status: "succeeded", oversized: { kind: "omitted", serializedChars: 250_000 } });
    expect(settlement).not.toHaveProperty("result");
    expect(jsonBytes(settlement)).toBeLessThan(256_000);
  });

  it("keeps a result inline while its escaped JSON fits", async () => {
    expect(await settlementOf(fx, uniquePath("escapes-small"), 'return "\\u0001".repeat(1000);')).toEqual({ status: "succeeded", result: "\u0001".repeat(1000) });
  });
});

describe("a settlement the store refuses", () => {
  let fx: HostFixture;
  beforeAll(async () => {
    // An inline bound past the store's 1 MiB event bound, so a settlement the store refuses is reached.
    fx = await startFixture({ host: { limits: { maxSettlementResultBytes: 4 * 1024 * 1024 } } });
  });
  afterAll(async () => fx?.stop());

  it("settles the script failed, naming the refusal, instead of leaving it unsettled", async () => {
    const settlement = await settlementOf(fx, uniquePath("refused"), 'return "x".repeat(1200000);');
    expect(settlement).toMatchObject({ status: "failed", failureKind: "runtime", phase: "execution", executionMayHaveOccurred: true });
    const error = (settlement as { error: string }).error;
    expect(error).toMatch(/^The script ran, but the event store refused its settlement: events\[0\] \(capability-host\/script-run-settled\) takes \d+ bytes of JSON; an event may take at most 1048576\./);
    expect(error).toContain("return less, or write large data to itx.files and return its path");
  });
});
