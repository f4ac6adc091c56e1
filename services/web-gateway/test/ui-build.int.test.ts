// When the gateway (and the browser tests) rebuild the web UI: a missing build, or one older
// than any of the UI's sources; never because of the build's own files.
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { uiNeedsBuild } from "../src/ui-build.ts";

let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A ui/ folder with one source file and a build, each written at the given second. */
function layout(times: { source: number; index?: number; asset?: number }) {
  root = mkdtempSync(join(tmpdir(), "agentrt-ui-"));
  const ui = join(root, "ui");
  const dist = join(ui, "dist");
  mkdirSync(join(ui, "src"), { recursive: true });
  const file = (path: string, at: number) => {
    writeFileSync(path, "x");
    utimesSync(path, at, at);
  };
  file(join(ui, "src", "page.tsx"), times.source);
  if (times.index !== undefined) {
    mkdirSync(join(dist, "assets"), { recursive: true });
    file(join(dist, "index.html"), times.index);
    if (times.asset !== undefined) file(join(dist, "assets", "app.js"), times.asset);
  }
  return { ui, dist };
}

describe("uiNeedsBuild", () => {
  it("given no build, then it needs one", () => {
    const { ui, dist } = layout({ source: 1_000 });
    expect(uiNeedsBuild(dist, ui)).toBe(true);
  });

  it("given a build newer than every source, then it does not", () => {
    const { ui, dist } = layout({ source: 1_000, index: 2_000 });
    expect(uiNeedsBuild(dist, ui)).toBe(false);
  });

  it("given a source changed after the build, then it needs one", () => {
    const { ui, dist } = layout({ source: 3_000, index: 2_000 });
    expect(uiNeedsBuild(dist, ui)).toBe(true);
  });

  it("given build files newer than the build's index, then they do not count as sources", () => {
    const { ui, dist } = layout({ source: 1_000, index: 2_000, asset: 5_000 });
    expect(uiNeedsBuild(dist, ui)).toBe(false);
  });

  it("given a workspace source the UI bundles (agent-core's display) changed after the build, then it needs one", () => {
    const { ui, dist } = layout({ source: 1_000, index: 2_000 });
    const core = join(root, "agent-core-src");
    mkdirSync(join(core, "display"), { recursive: true });
    writeFileSync(join(core, "display", "duration.ts"), "x");
    utimesSync(join(core, "display", "duration.ts"), 1_500, 1_500);
    expect(uiNeedsBuild(dist, ui, [core])).toBe(false);
    utimesSync(join(core, "display", "duration.ts"), 3_000, 3_000);
    expect(uiNeedsBuild(dist, ui, [core])).toBe(true);
  });
});
