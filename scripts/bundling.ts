// The one esbuild setup both builds share: the quickstart's precompiled services
// (build-services.ts) and the production tree (build-prod.ts) bundle Node 20 ESM the same way,
// with esbuild loaded from tsx's own dependency (the version the lockfile pins) instead of a
// second declaration. Each build adds only what differs: banners, plugins, source maps.
// Both keep each first-party module's `import.meta.url` / `.dirname` / `.filename` pointing at
// the module's own location, so `new URL("../../types/itx.d.ts", import.meta.url)` and worker
// entries found next to a module resolve to the same files from a bundle as from the sources.

import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { CODE_CACHE_STATUS_KEY } from "../packages/service-kit/src/run-service.ts";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

// The slice of esbuild's API the builds use (its types do not resolve from the repo root).
export interface EsbuildPluginBuild {
  onResolve(options: { filter: RegExp; namespace?: string }, callback: (args: { path: string }) => { path: string; namespace?: string; external?: boolean } | undefined): void;
  onLoad(options: { filter: RegExp; namespace?: string }, callback: (args: { path: string }) => { contents: string; loader: "ts" | "js" } | undefined): void;
}
export interface EsbuildPlugin {
  name: string;
  setup(build: EsbuildPluginBuild): void;
}
interface Esbuild {
  build(options: Record<string, unknown>): Promise<unknown>;
}

let loaded: Promise<Esbuild> | undefined;
function esbuild(): Promise<Esbuild> {
  loaded ??= (async () => {
    const fromTsx = createRequire(createRequire(join(ROOT, "package.json")).resolve("tsx/package.json"));
    return (await import(fromTsx.resolve("esbuild"))) as Esbuild;
  })();
  return loaded;
}

export interface BundleOptions {
  readonly entry: string;
  readonly outfile: string;
  /** JavaScript prepended to the bundle (shims for what an ESM file lacks). */
  readonly banner?: string;
  readonly plugins?: readonly EsbuildPlugin[];
  /** Extra esbuild options (source maps, legal comments). */
  readonly extra?: Record<string, unknown>;
}

/** Bundles one entry into one Node 20 ESM file. */
export async function bundleEntry(options: BundleOptions): Promise<void> {
  await (await esbuild()).build({
    entryPoints: [options.entry],
    outfile: options.outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    ...(options.banner === undefined ? {} : { banner: { js: options.banner } }),
    ...(options.plugins === undefined ? {} : { plugins: [...options.plugins] }),
    ...options.extra,
  });
}

/** Helpers the rewritten `import.meta.dirname` / `.filename` call; goes in the bundle's banner. */
export const IMPORT_META_BANNER = [
  'import { fileURLToPath as __agentrtFileURLToPath } from "node:url";',
  "const __agentrtFilename = (u) => __agentrtFileURLToPath(u);",
  'const __agentrtDirname = (u) => __agentrtFileURLToPath(new URL(".", u)).replace(/[\\\\/]$/, "");',
].join("\n");

/**
 * Rewrites `import.meta.url` / `.dirname` / `.filename` of each first-party module to the
 * module's path under `outRoot` (the repository itself for the quickstart's in-place bundles,
 * the production tree for the image), relative to the bundle file. `bundleUrl` is how the
 * bundle names its own URL: `import.meta.url` in ESM, the loader's variable in a service bundle.
 */
export function importMetaPlugin(outfile: string, outRoot: string, bundleUrl = "import.meta.url"): EsbuildPlugin {
  return {
    name: "agentrt-import-meta",
    setup(build) {
      build.onLoad({ filter: /\.(ts|mts|mjs|js)$/ }, (args) => {
        if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
        const source = readFileSync(args.path, "utf8");
        if (!source.includes("import.meta")) return undefined;
        const relFromBundle = relative(dirname(outfile), join(outRoot, relative(ROOT, args.path))).split(sep).join("/");
        const url = `new URL(${JSON.stringify(relFromBundle)}, ${bundleUrl}).href`;
        const contents = source
          .replaceAll("import.meta.url", url)
          .replaceAll("import.meta.dirname", `__agentrtDirname(${url})`)
          .replaceAll("import.meta.filename", `__agentrtFilename(${url})`);
        return { contents, loader: args.path.endsWith(".ts") || args.path.endsWith(".mts") ? "ts" : "js" };
      });
    },
  };
}

// ---- service bundles: CommonJS compiled from V8's code cache ---------------------------------
//
// Parsing and compiling a 3 MB bundle is most of what a service does before its first line runs
// (BENCHMARKS.md "Start-up"), and a restarted driver is how a killed one's turn resumes. Node 20
// keeps no compile cache for ES modules, but `vm.Script` takes V8's code cache for a script. So a
// service's entry is bundled as CommonJS (`<name>.cjs`), its code cache is made at build time by
// the same `node` (`<name>.cjs.cache`; a V8 of another version or other flags rejects it and the
// script compiles from source, as before), and `<name>.mjs` — the path every launcher already
// runs — is a small loader that compiles the script with the cache and calls it as CommonJS.

/** What the loader and the cache's producer wrap the bundle in: the two must match byte for byte. */
const WRAP_HEAD = "(function (exports, require, module, __filename, __dirname) { ";
const WRAP_TAIL = "\n})";

/** The bundle's own URL, for the rewritten `import.meta.url` of its modules (see importMetaPlugin). */
const BUNDLE_URL = "__agentrtBundleUrl";

/** Helpers of a CommonJS service bundle: its own URL and the `import.meta.dirname` / `.filename` rewrites. */
const CJS_BANNER = [
  `const ${BUNDLE_URL} = require("node:url").pathToFileURL(__filename).href;`,
  'const __agentrtFilename = (u) => require("node:url").fileURLToPath(u);',
  'const __agentrtDirname = (u) => require("node:url").fileURLToPath(new URL(".", u)).replace(/[\\\\/]$/, "");',
].join("\n");

/** How long after its start a service takes the warm cache of its own (see serviceLoader). */
const WARM_CACHE_AFTER_MS = 5_000;

/** The loader `<name>.mjs` for the code in `<name>.cjs`. */
export function serviceLoader(codeFileName: string): string {
  return `// Generated by scripts/bundling.ts: runs ${codeFileName} (this service bundled as CommonJS),
// compiled with the V8 code cache the build made for it. A node whose V8 refuses that cache
// (another version, or flags such as --max-old-space-size) compiles from source once and keeps
// a cache of its own in the temp directory for its next start.
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

const file = fileURLToPath(new URL(${JSON.stringify(`./${codeFileName}`)}, import.meta.url));
const readOrNothing = (path) => {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
};
// AGENTRT_CODE_CACHE=off compiles from source (a baseline for bench/startup, or a way out).
const off = process.env.AGENTRT_CODE_CACHE === "off";
// Its own cache is code it will run: kept only in a directory that this user owns and no one
// else may write (in the chart, the pod's own /tmp).
const ownDir = join(tmpdir(), \`agentrt-code-cache-\${process.getuid?.() ?? "user"}\`);
const ownDirSafe = () => {
  try {
    mkdirSync(ownDir, { recursive: true, mode: 0o700 });
    const dir = statSync(ownDir);
    return dir.isDirectory() && (process.getuid === undefined || dir.uid === process.getuid()) && (dir.mode & 0o022) === 0;
  } catch {
    return false;
  }
};
const stat = statSync(file);
const hash = (text) => createHash("sha256").update(text).digest("hex").slice(0, 16);
// Named by the code file's path, then by its build and this node and its flags: a newer build of
// the same path replaces the older one's (see keepOwn).
const ownPrefix = \`\${hash(file)}-\`;
const own = join(ownDir, \`\${ownPrefix}\${hash([stat.size, stat.mtimeMs, process.version, process.execArgv.join(" "), process.env.NODE_OPTIONS ?? ""].join("\\0"))}.cache\`);
const ownCache = off || !ownDirSafe() ? undefined : readOrNothing(own);
const cachedData = off ? undefined : (ownCache ?? readOrNothing(\`\${file}.cache\`));
const script = new Script(${JSON.stringify(WRAP_HEAD)} + readFileSync(file, "utf8") + ${JSON.stringify(WRAP_TAIL)}, { filename: file, cachedData });
/** Writes this script's cache as its own; drops other builds' of the same path and any a week old. */
const keepOwn = () => {
  if (!ownDirSafe()) return false;
  try {
    writeFileSync(\`\${own}.\${process.pid}\`, script.createCachedData(), { mode: 0o600 });
    renameSync(\`\${own}.\${process.pid}\`, own);
  } catch {
    // A temp directory this process cannot write: the next start compiles as this one did.
    return false;
  }
  // Another build's cache of this path goes; another writer's file still being written (no
  // ".cache" ending yet) only once it is a week old, like anything else.
  const weekAgo = Date.now() - 7 * 24 * 3600 * 1000;
  let names = [];
  try {
    names = readdirSync(ownDir);
  } catch {
    // Removed meanwhile: nothing to tidy.
  }
  for (const name of names) {
    const path = join(ownDir, name);
    try {
      if ((name.endsWith(".cache") && name.startsWith(ownPrefix) && path !== own) || statSync(path).mtimeMs < weekAgo) rmSync(path, { force: true });
    } catch {
      // Gone meanwhile, or not ours to remove.
    }
  }
  return true;
};
let status = off ? "off" : cachedData === undefined ? "absent" : script.cachedDataRejected ? "rejected" : ownCache === undefined ? "used" : "own";
if ((status === "absent" || status === "rejected") && keepOwn()) status += ", own cache written";
// How this code was compiled: "used" (the build's cache), "own" (this node's, made because it
// refused the build's), "rejected"/"absent" (from source; ", own cache written" when it then made
// its own), "off" (AGENTRT_CODE_CACHE=off). runService logs it as codeCache.
globalThis[Symbol.for(${JSON.stringify(CODE_CACHE_STATUS_KEY)})] = status;
const module = { exports: {} };
script.runInThisContext()(module.exports, createRequire(file), module, file, dirname(file));
// A few seconds in, the functions its start and first work compiled are in V8's hands too: a
// cache taken then spares the next start of this code here (a restarted container finds it in
// the pod's /tmp) compiling them again. Taken once, by a process that did not start from one.
if (status !== "own" && !off) setTimeout(keepOwn, ${WARM_CACHE_AFTER_MS}).unref();
`;
}

/** Makes `<codeFile>.cache` in a plain `node` of this build (no loader hooks, no NODE_OPTIONS). */
function writeCodeCache(codeFile: string): void {
  const producer = [
    'const { readFileSync, writeFileSync } = require("node:fs");',
    'const { Script } = require("node:vm");',
    "const file = process.argv[1];",
    `const script = new Script(${JSON.stringify(WRAP_HEAD)} + readFileSync(file, "utf8") + ${JSON.stringify(WRAP_TAIL)}, { filename: file });`,
    "writeFileSync(`${file}.cache`, script.createCachedData());",
  ].join("\n");
  const { NODE_OPTIONS: _omitted, ...env } = process.env;
  const made = spawnSync(process.execPath, ["-e", producer, codeFile], { env, encoding: "utf8" });
  if (made.status !== 0) throw new Error(`code cache for ${codeFile}: ${made.stderr || made.error?.message}`);
}

export interface ServiceBundleOptions {
  readonly entry: string;
  /** The loader's path, `<name>.mjs`; the code goes to `<name>.cjs` beside it. */
  readonly loaderFile: string;
  /** The tree the rewritten `import.meta` paths point into (see importMetaPlugin). */
  readonly outRoot: string;
  readonly plugins?: readonly EsbuildPlugin[];
  readonly extra?: Record<string, unknown>;
}

/** Bundles a service's entry as CommonJS with its code cache and loader; returns the code file's path. */
export async function bundleService(options: ServiceBundleOptions): Promise<string> {
  const codeFile = options.loaderFile.replace(/\.mjs$/, ".cjs");
  if (codeFile === options.loaderFile) throw new Error(`a service loader ends in .mjs: ${options.loaderFile}`);
  rmSync(`${codeFile}.cache`, { force: true });
  await bundleEntry({
    entry: options.entry,
    outfile: codeFile,
    banner: CJS_BANNER,
    plugins: [...(options.plugins ?? []), importMetaPlugin(codeFile, options.outRoot, BUNDLE_URL)],
    // `import()` becomes `require`: node 20 runs a script compiled from a code cache without its
    // dynamic-import loader (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), and what the services load
    // that way (node's own modules, the TypeScript compiler) is CommonJS.
    extra: { format: "cjs", supported: { "dynamic-import": false }, ...options.extra },
  });
  writeCodeCache(codeFile);
  writeFileSync(options.loaderFile, serviceLoader(basename(codeFile)));
  return codeFile;
}
