// A service bundle (scripts/bundling.ts, bundleService) as both builds make it: the entry
// bundled as CommonJS, V8's code cache for it made by this node, and the `.mjs` loader every
// launcher runs. Given a small entry that reads a file next to its source, imports a module
// by a computed path and reports how its code was compiled: the loader runs it from the cache;
// from source when the cache is damaged or gone, with the same result.

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleService, ROOT } from "../../scripts/bundling.ts";

let dir: string;
let loader: string;
let code: string;

/** Runs the loader in a plain node; its one line of output, parsed. */
function runLoader(env: Record<string, string> = {}): { codeCache: string; data: string; dir: string; computed: string; argv: number } {
  const run = spawnSync(process.execPath, [loader, "x"], { encoding: "utf8", env: { PATH: process.env.PATH ?? "", ...env } });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim()) as ReturnType<typeof runLoader>;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "agentrt-service-bundle-"));
  writeFileSync(join(dir, "data.txt"), "next to the source");
  writeFileSync(join(dir, "computed.cjs"), "exports.answer = 'loaded by a computed path';\n");
  writeFileSync(
    join(dir, "main.ts"),
    [
      'import { readFileSync } from "node:fs";',
      "const name = ['computed', 'cjs'].join('.');",
      "const status: unknown = (globalThis as Record<symbol, unknown>)[Symbol.for('agentrt.codeCache')];",
      "void import(`${import.meta.dirname}/${name}`).then((m: { answer: string }) => {",
      "  const data = readFileSync(new URL('./data.txt', import.meta.url), 'utf8');",
      "  process.stdout.write(`${JSON.stringify({ codeCache: status, data, dir: import.meta.dirname, computed: m.answer, argv: process.argv.length })}\\n`);",
      "});",
    ].join("\n"),
  );
  mkdirSync(join(dir, "out"));
  loader = join(dir, "out", "main.bundle.mjs");
  code = await bundleService({ entry: join(dir, "main.ts"), loaderFile: loader, outRoot: ROOT });
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a service bundle", () => {
  it("is CommonJS with a code cache beside it and a loader at the path launchers run", () => {
    expect(code).toBe(join(dir, "out", "main.bundle.cjs"));
    expect(existsSync(`${code}.cache`)).toBe(true);
    expect(readFileSync(code, "utf8")).not.toMatch(/^import /m);
  });

  it("runs from the build's code cache, its modules finding files next to their sources", () => {
    expect(runLoader()).toEqual({ codeCache: "used", data: "next to the source", dir, computed: "loaded by a computed path", argv: 3 });
  });

  it("compiles from source when AGENTRT_CODE_CACHE=off, with the same result", () => {
    expect(runLoader({ AGENTRT_CODE_CACHE: "off" })).toMatchObject({ codeCache: "off", data: "next to the source", computed: "loaded by a computed path" });
  });

  it("compiles from source when the cache does not fit, with the same result", () => {
    const cache = readFileSync(`${code}.cache`);
    try {
      writeFileSync(`${code}.cache`, Buffer.from(cache.map((byte, i) => (i < 64 ? byte ^ 0xff : byte))));
      expect(runLoader()).toMatchObject({ codeCache: "rejected", data: "next to the source", computed: "loaded by a computed path" });
    } finally {
      writeFileSync(`${code}.cache`, cache);
    }
  });

  it("compiles from source when there is no cache", () => {
    rmSync(`${code}.cache`);
    expect(runLoader()).toMatchObject({ codeCache: "absent", data: "next to the source", computed: "loaded by a computed path" });
  });
});
