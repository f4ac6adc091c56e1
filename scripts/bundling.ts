// The one esbuild setup both builds share: the quickstart's precompiled services
// (build-services.ts) and the production tree (build-prod.ts) bundle Node 20 ESM the same way,
// with esbuild loaded from tsx's own dependency (the version the lockfile pins) instead of a
// second declaration. Each build adds only what differs: banners, plugins, source maps.

import { createRequire } from "node:module";
import { dirname, join } from "node:path";
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
