// Builds the production tree the image ships (and test/image/production-tree.test.ts runs):
//
//   <out>/services/<service>/
//     package.json, node_modules/      `pnpm deploy --prod` (flat layout, production deps only)
//     dist/main.mjs                     the loader of dist/main.cjs: the service bundled with esbuild
//                                       as CommonJS with its packages inlined (all but the
//                                       TypeScript compiler), compiled from dist/main.cjs.cache
//                                       (V8's code cache, made by this build's node; bundleService)
//     src/**/<name>-entry.mjs           worker-thread entries, bundled in place; their
//                                       third-party packages stay in node_modules
//     types/, src/*.md, ui/dist/ ...    files read at run time, at their source-relative paths
//
// No TypeScript loader runs in production: `import.meta.url` and `import.meta.dirname` inside a
// bundle are rewritten to the module's ORIGINAL location in the tree, so every
// `new URL("../../types/itx.d.ts", import.meta.url)` and `join(import.meta.dirname, ...)` keeps
// pointing at the same file it does under tsx. Worker entries are found by name (every
// `*-entry.mjs` under a service's src/), so a new worker needs no change here.
//
// Usage: tsx scripts/build-prod.ts <out-dir> [--skip-ui]
//   --skip-ui  reuse an existing services/web-gateway/ui/dist (the test builds it once)

import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { bundleEntry, bundleService, type EsbuildPlugin, IMPORT_META_BANNER, importMetaPlugin, ROOT } from "./bundling.ts";

export const SERVICES = ["agent-reducer", "llm-driver", "capability-host", "web-gateway"] as const;
/** Packages that exist to load TypeScript at run time; the production tree must not need them. */
const DEV_ONLY_LOADERS = ["tsx", "esbuild", "@esbuild", "get-tsconfig", "resolve-pkg-maps"];

function run(cmd: string, args: string[], cwd = ROOT): void {
  const r = spawnSync(cmd, args, { cwd, stdio: "inherit" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed with ${r.status ?? r.signal}`);
}

function walk(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== "node_modules") walk(p, out);
    } else out.push(p);
  }
  return out;
}

/** A worker entry registers tsx for the dev run; compiled, there is nothing to register. */
const noTsxPlugin: EsbuildPlugin = {
  name: "agentrt-no-tsx",
  setup(build) {
    build.onResolve({ filter: /^tsx\/esm\/api$/ }, () => ({ path: "tsx-register", namespace: "agentrt-noop" }));
    build.onLoad({ filter: /.*/, namespace: "agentrt-noop" }, () => ({ contents: "export function register() {}", loader: "js" }));
  },
};

/** Workspace packages are bundled; everything else resolves from node_modules at run time. */
const externalsPlugin: EsbuildPlugin = {
  name: "agentrt-externals",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith("@agentrt/") ? undefined : { path: args.path, external: true }));
  },
};

async function bundle(entry: string, outfile: string, outRoot: string, options: { selfContained?: boolean } = {}): Promise<void> {
  await bundleEntry({
    entry,
    outfile,
    banner: IMPORT_META_BANNER,
    // A self-contained bundle (bin/) has no node_modules next to it: everything is inlined.
    plugins: options.selfContained ? [importMetaPlugin(outfile, outRoot)] : [noTsxPlugin, externalsPlugin, importMetaPlugin(outfile, outRoot)],
    extra: BUNDLE_EXTRA,
  });
  refuseTypeScriptLoads(entry, outfile);
}

const BUNDLE_EXTRA = { sourcemap: "linked", legalComments: "none" };

/**
 * A module loaded at run time by a computed path (a worker started on a .ts file, a dynamic
 * import of TypeScript) would need a loader the image does not have: fail the build, not the pod.
 */
function refuseTypeScriptLoads(entry: string, file: string): void {
  const leftover = /(?:import\(|new Worker\()\s*(?:new URL\()?\s*["'][^"']+\.m?ts["']/.exec(readFileSync(file, "utf8"));
  if (leftover) throw new Error(`${relative(ROOT, entry)}: the bundle still loads TypeScript at run time (${leftover[0]}); start workers through a *-entry.mjs`);
}

export async function buildProductionTree(outRoot: string, options: { skipUi?: boolean } = {}): Promise<void> {
  outRoot = resolve(outRoot);
  rmSync(outRoot, { recursive: true, force: true });
  mkdirSync(join(outRoot, "services"), { recursive: true });
  const uiDist = join(ROOT, "services/web-gateway/ui/dist");
  if (!options.skipUi || !existsSync(join(uiDist, "index.html"))) run("pnpm", ["--filter", "@agentrt/web-gateway", "build:ui"]);

  for (const service of SERVICES) {
    const src = join(ROOT, "services", service);
    const out = join(outRoot, "services", service);
    run("pnpm", ["--filter", `@agentrt/${service}`, "deploy", "--prod", "--prefer-offline", "--config.node-linker=hoisted", "--config.package-import-method=copy", out]);
    const main = join(src, "src/main.ts");
    // The service's own code and its third-party packages in one file, as the quickstart's bundles
    // (build-services.ts): the code cache then covers all of it, where modules loaded from
    // node_modules one by one would each be resolved and compiled at every start. The
    // TypeScript compiler stays in node_modules (the host's checker workers load it).
    refuseTypeScriptLoads(main, await bundleService({ entry: main, loaderFile: join(out, "dist/main.mjs"), outRoot, plugins: [noTsxPlugin], extra: { ...BUNDLE_EXTRA, external: ["typescript"] } }));
    for (const file of walk(join(src, "src")).filter((f) => f.endsWith("-entry.mjs"))) {
      await bundle(file, join(out, relative(src, file)), outRoot);
    }
    // What stays: compiled output and the non-TypeScript files the code reads (prompts, .d.ts).
    for (const file of walk(join(out, "src"))) {
      if (file.endsWith(".ts") && !file.endsWith(".d.ts")) rmSync(file);
    }
    for (const extra of ["test", "bench", "tsconfig.json", "pnpm-lock.yaml", "pnpm-workspace.yaml", "ui/src", "ui/index.html", "ui/tsconfig.json", "ui/vite.config.ts"]) {
      rmSync(join(out, extra), { recursive: true, force: true });
    }
    for (const pkg of [...DEV_ONLY_LOADERS, "@agentrt"]) rmSync(join(out, "node_modules", pkg), { recursive: true, force: true });
  }
  // The helm test hook's client: one turn through the gateway's HTTP API.
  await bundle(join(ROOT, "services/web-gateway/src/cli/smoke-turn.ts"), join(outRoot, "bin/smoke-turn.mjs"), outRoot, { selfContained: true });
  const gatewayUi = join(outRoot, "services/web-gateway/ui/dist");
  rmSync(gatewayUi, { recursive: true, force: true });
  cpSync(uiDist, gatewayUi, { recursive: true });
  writeFileSync(join(outRoot, "BUILD_INFO.json"), `${JSON.stringify({ services: SERVICES, builtAt: new Date().toISOString() }, null, 2)}\n`);
  const bytes = walk(outRoot).reduce((sum, f) => sum + statSync(f).size, 0);
  process.stdout.write(`production tree in ${outRoot} (${Math.round(bytes / 1e6)} MB without node_modules)\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const args = process.argv.slice(2);
  const outDir = args.find((a) => !a.startsWith("--"));
  if (!outDir) throw new Error("usage: build-prod.ts <out-dir> [--skip-ui]");
  await buildProductionTree(outDir, { skipUi: args.includes("--skip-ui") });
}
