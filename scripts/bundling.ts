// What the quickstart's bundles (scripts/build-services.ts) and the production tree
// (scripts/build-prod.ts) share: esbuild itself, and the rewrite that keeps every bundled
// module's `import.meta.url` / `.dirname` / `.filename` pointing at the module's own location,
// so `new URL("../../types/itx.d.ts", import.meta.url)` and worker entries found next to a
// module resolve to the same files from a bundle as from the sources.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";

export const REPO_ROOT = resolve(import.meta.dirname, "..");

// The slice of esbuild's API the builds use (its types do not resolve from the repo root).
export interface EsbuildPluginBuild {
  onResolve(options: { filter: RegExp; namespace?: string }, callback: (args: { path: string }) => { path: string; namespace?: string; external?: boolean } | undefined): void;
  onLoad(options: { filter: RegExp; namespace?: string }, callback: (args: { path: string }) => { contents: string; loader: "ts" | "js" } | undefined): void;
}
export interface EsbuildPlugin {
  name: string;
  setup(build: EsbuildPluginBuild): void;
}
export interface Esbuild {
  build(options: Record<string, unknown>): Promise<{ errors: unknown[] }>;
}

/** esbuild comes with the dev toolchain as tsx's own dependency (the version the lockfile pins). */
export async function loadEsbuild(): Promise<Esbuild> {
  const fromTsx = createRequire(createRequire(join(REPO_ROOT, "package.json")).resolve("tsx/package.json"));
  return (await import(fromTsx.resolve("esbuild"))) as Esbuild;
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
 * the production tree for the image), relative to the bundle file.
 */
export function importMetaPlugin(outfile: string, outRoot: string): EsbuildPlugin {
  return {
    name: "agentrt-import-meta",
    setup(build) {
      build.onLoad({ filter: /\.(ts|mts|mjs|js)$/ }, (args) => {
        if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
        const source = readFileSync(args.path, "utf8");
        if (!source.includes("import.meta")) return undefined;
        const relFromBundle = relative(dirname(outfile), join(outRoot, relative(REPO_ROOT, args.path))).split(sep).join("/");
        const url = `new URL(${JSON.stringify(relFromBundle)}, import.meta.url).href`;
        const contents = source
          .replaceAll("import.meta.url", url)
          .replaceAll("import.meta.dirname", `__agentrtDirname(${url})`)
          .replaceAll("import.meta.filename", `__agentrtFilename(${url})`);
        return { contents, loader: args.path.endsWith(".ts") || args.path.endsWith(".mts") ? "ts" : "js" };
      });
    },
  };
}
