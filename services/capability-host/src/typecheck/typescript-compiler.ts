// The TypeScript compiler, loaded on first use. Checks and compiles run in worker threads, so
// the host's own thread never needs the compiler: a static `import ts from "typescript"` in any
// module of its graph would load and parse the 9 MB compiler before `/readyz` (an esbuild bundle
// hoists even a dynamically imported module's imports). `require` also skips the export scan
// Node runs when ESM imports a CommonJS file of that size.

import { createRequire } from "node:module";
import type * as TypeScript from "typescript";

let compiler: typeof TypeScript | undefined;

export function typescript(): typeof TypeScript {
  compiler ??= createRequire(import.meta.url)("typescript") as typeof TypeScript;
  return compiler;
}
