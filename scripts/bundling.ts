// The one esbuild setup both builds share: the quickstart's precompiled services
// (build-services.ts) and the production tree (build-prod.ts) bundle Node 20 ESM the same way,
// with esbuild loaded from tsx's own dependency (the version the lockfile pins) instead of a
// second declaration. Each build adds only what differs: banners, plugins, source maps.
// Both keep each first-party module's `import.meta.url` / `.dirname` / `.filename` pointing at
// the module's own location, so `new URL("../../types/itx.d.ts", import.meta.url)` and worker
// entries found next to a module resolve to the same files from a bundle as from the sources.

import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

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
        const relFromBundle = relative(dirname(outfile), join(outRoot, relative(ROOT, args.path))).split(sep).join("/");
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
