// Precompiles the quickstart's processes so they start without transpiling or resolving hundreds
// of modules: esbuild bundles each entry with everything it imports into one CommonJS file next
// to its main.ts (`src/main.bundle.cjs`, with V8's code cache for it in `main.bundle.cjs.cache`),
// run by the loader `src/main.bundle.mjs` (all three git-ignored; see bundleService), so paths
// the code computes from its own module (the gateway's default prompt file and UI folder) still
// point at the same files. Starting from the bundle cuts a service's start-up CPU about
// threefold against `node --import tsx`, and the code cache takes most of what is left of
// loading it (BENCHMARKS.md "Start-up").
//
// Modules that find files next to themselves (the host's worker entries and itx declarations)
// keep finding them: each module's `import.meta.url` is rewritten to its own source location
// (scripts/bundling.ts). The TypeScript compiler stays out of the bundles: only the host's worker
// threads load it (typecheck/typescript-compiler.ts). setup.sh runs this when a source is newer
// than the bundles; `AGENTRT_FROM_SOURCE=1 ./scripts/up.sh` ignores them.
//
// Run: node_modules/.bin/tsx scripts/build-services.ts

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleService, ROOT as root } from "./bundling.ts";

/** Entries that are bundled, relative to the repository root. */
export const BUNDLED_ENTRIES = [
  "services/agent-reducer/src/main.ts",
  "services/llm-driver/src/main.ts",
  "services/web-gateway/src/main.ts",
  "services/capability-host/src/main.ts",
  "examples/repo-provider/src/main.ts",
] as const;

export const bundleOf = (entry: string): string => entry.replace(/main\.ts$/, "main.bundle.mjs");
/** Touched after every successful build; setup.sh compares sources against it. */
export const BUILD_STAMP = join(root, "node_modules", ".agentrt-bundles-built");

async function main(): Promise<void> {
  const started = Date.now();
  await Promise.all(
    BUNDLED_ENTRIES.map((entry) => {
      return bundleService({ entry: join(root, entry), loaderFile: join(root, bundleOf(entry)), outRoot: root, extra: { external: ["typescript"] } });
    }),
  );
  writeFileSync(BUILD_STAMP, new Date().toISOString());
  process.stderr.write(`bundled ${BUNDLED_ENTRIES.length} entries in ${Date.now() - started} ms\n`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) await main();
