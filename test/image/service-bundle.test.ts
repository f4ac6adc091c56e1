// A service bundle (scripts/bundling.ts, bundleService) as both builds make it: the entry
// bundled as CommonJS, V8's code cache for it made by this node, and the `.mjs` loader every
// launcher runs. Given a small entry that reads a file next to its source, imports a module
// by a computed path and reports how its code was compiled: the loader runs it from the cache;
// from source when the cache is damaged or gone or this node's V8 flags refuse it, with the same
// result, and then from a cache of its own in a temp directory only its user may write.

import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleService, ROOT } from "../../scripts/bundling.ts";
import { CODE_CACHE_STATUS_KEY } from "../../packages/service-kit/src/run-service.ts";

let dir: string;
let loader: string;
let code: string;
/** The temp directory the loaders run with (their own caches go there). */
let temp: string;

/** Runs the loader in a plain node; its one line of output, parsed. */
function runLoader(env: Record<string, string> = {}): { codeCache: string; data: string; dir: string; computed: string; argv: number } {
  const run = spawnSync(process.execPath, [loader, "x"], { encoding: "utf8", env: { PATH: process.env.PATH ?? "", TMPDIR: temp, ...env } });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim()) as ReturnType<typeof runLoader>;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "agentrt-service-bundle-"));
  temp = join(dir, "tmp");
  mkdirSync(temp);
  writeFileSync(join(dir, "data.txt"), "next to the source");
  writeFileSync(join(dir, "computed.cjs"), "exports.answer = 'loaded by a computed path';\n");
  writeFileSync(
    join(dir, "main.ts"),
    [
      'import { readFileSync } from "node:fs";',
      "const name = ['computed', 'cjs'].join('.');",
      `const status: unknown = (globalThis as Record<symbol, unknown>)[Symbol.for(${JSON.stringify(CODE_CACHE_STATUS_KEY)})];`,
      "void import(`${import.meta.dirname}/${name}`).then((m: { answer: string }) => {",
      "  const data = readFileSync(new URL('./data.txt', import.meta.url), 'utf8');",
      "  process.stdout.write(`${JSON.stringify({ codeCache: status, data, dir: import.meta.dirname, computed: m.answer, argv: process.argv.length })}\\n`);",
      "});",
      "setTimeout(() => undefined, Number(process.env.STAY_MS ?? 0));",
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

  it("compiles from source when the cache does not fit, then from a cache of its own", () => {
    const cache = readFileSync(`${code}.cache`);
    try {
      writeFileSync(`${code}.cache`, Buffer.from(cache.map((byte, i) => (i < 64 ? byte ^ 0xff : byte))));
      expect(runLoader()).toMatchObject({ codeCache: "rejected, own cache written", data: "next to the source", computed: "loaded by a computed path" });
      expect(runLoader()).toMatchObject({ codeCache: "own", data: "next to the source", computed: "loaded by a computed path" });
    } finally {
      writeFileSync(`${code}.cache`, cache);
      rmSync(temp, { recursive: true, force: true });
      mkdirSync(temp);
    }
  });

  it("makes its own cache when this node's flags refuse the build's (--max-old-space-size)", () => {
    const flags = { NODE_OPTIONS: "--max-old-space-size=256" };
    expect(runLoader(flags)).toMatchObject({ codeCache: "rejected, own cache written", computed: "loaded by a computed path" });
    expect(runLoader(flags)).toMatchObject({ codeCache: "own", computed: "loaded by a computed path" });
    expect(runLoader(), "without the flags, the build's cache").toMatchObject({ codeCache: "used" });
  });

  it("keeps no cache of its own where others may write: compiles from source every time", () => {
    const shared = join(dir, "shared-tmp");
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    const ownDir = join(shared, `agentrt-code-cache-${process.getuid?.() ?? "user"}`);
    mkdirSync(ownDir, { mode: 0o777 });
    chmodSync(ownDir, 0o777);
    const flags = { NODE_OPTIONS: "--max-old-space-size=256", TMPDIR: shared };
    expect(runLoader(flags)).toMatchObject({ codeCache: "rejected", computed: "loaded by a computed path" });
    expect(readdirSync(ownDir)).toEqual([]);
  });

  it("a process that ran for a while leaves a warm cache of its own, which the next start uses", () => {
    try {
      expect(runLoader({ STAY_MS: "6000" })).toMatchObject({ codeCache: "used" });
      const ownDir = join(temp, `agentrt-code-cache-${process.getuid?.() ?? "user"}`);
      const [cache] = readdirSync(ownDir);
      expect(cache).toMatch(/^[0-9a-f]{16}-[0-9a-f]{16}\.cache$/);
      expect(statSync(join(ownDir, cache!)).mode & 0o777, "only its user may read it").toBe(0o600);
      expect(runLoader()).toMatchObject({ codeCache: "own", data: "next to the source", computed: "loaded by a computed path" });
    } finally {
      rmSync(temp, { recursive: true, force: true });
      mkdirSync(temp);
    }
  }, 20_000);

  it("keeps one cache of its own per code file: a newer build's replaces the older's, and a week-old one goes", () => {
    const flags = { NODE_OPTIONS: "--max-old-space-size=256" };
    const ownDir = join(temp, `agentrt-code-cache-${process.getuid?.() ?? "user"}`);
    try {
      expect(runLoader(flags)).toMatchObject({ codeCache: "rejected, own cache written" });
      const [first] = readdirSync(ownDir);
      const abandoned = join(ownDir, "0123456789abcdef-0123456789abcdef.cache");
      writeFileSync(abandoned, "a build long gone");
      utimesSync(abandoned, new Date(Date.now() - 8 * 24 * 3600 * 1000), new Date(Date.now() - 8 * 24 * 3600 * 1000));
      // The same code file rebuilt: another modification time, so another cache of its own.
      const later = new Date(Date.now() + 60_000);
      utimesSync(code, later, later);
      expect(runLoader(flags)).toMatchObject({ codeCache: "rejected, own cache written", computed: "loaded by a computed path" });
      const left = readdirSync(ownDir);
      expect(left).toHaveLength(1);
      expect(left[0]).not.toBe(first);
      expect(left[0]!.slice(0, 17), "the same code file's").toBe(first!.slice(0, 17));
    } finally {
      rmSync(temp, { recursive: true, force: true });
      mkdirSync(temp);
    }
  });

  it("compiles from source when there is no cache, then from its own", () => {
    rmSync(`${code}.cache`);
    expect(runLoader()).toMatchObject({ codeCache: "absent, own cache written", data: "next to the source", computed: "loaded by a computed path" });
    expect(runLoader()).toMatchObject({ codeCache: "own", data: "next to the source", computed: "loaded by a computed path" });
  });
});
