// Issue #13: installing a fresh clone on the Node the README names (20) prints no
// "Unsupported engine" and no workspace-cycle warning.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FreshClone, freshClone, installFromStore } from "./support/clone.ts";

let clone: FreshClone;
let output: string;
beforeAll(async () => {
  clone = await freshClone();
  output = await installFromStore(clone.dir);
}, 120_000);
afterAll(() => clone?.remove());

describe("a fresh clone's install", () => {
  it("succeeds", () => {
    expect(output).toMatch(/Done in/);
  });

  it("warns about no unsupported engine", () => {
    expect(output).not.toMatch(/unsupported engine/i);
  });

  it("warns about no workspace cycle", () => {
    expect(output).not.toMatch(/cyclic workspace dependencies/i);
  });
});
