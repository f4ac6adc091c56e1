// Builds the web UI on start when its dist folder is missing or older than its sources, so a
// fresh clone serves a UI without a separate step and a pulled UI change is never served stale;
// a failed build leaves the "not built" page (or the previous build) in place.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Logger } from "@agentrt/service-kit";

export const PACKAGE_DIR = join(import.meta.dirname, "..");
export const UI_SOURCE_DIR = join(PACKAGE_DIR, "ui");
export const DEFAULT_UI_DIST = join(UI_SOURCE_DIR, "dist");
/** Workspace sources the UI bundles (`@agentrt/agent-core/display` and the fold it uses). */
export const UI_WORKSPACE_SOURCES = [join(PACKAGE_DIR, "../../packages/agent-core/src"), join(PACKAGE_DIR, "../../packages/contract/src")];

/** True when `distDir` has no build, or one older than some file of the UI's sources (its own or the workspace's it bundles). */
export function uiNeedsBuild(distDir: string, sourceDir: string = UI_SOURCE_DIR, workspaceSources: readonly string[] = sourceDir === UI_SOURCE_DIR ? UI_WORKSPACE_SOURCES : []): boolean {
  const index = join(distDir, "index.html");
  if (!existsSync(index)) return true;
  const skip = new Set([resolve(distDir), resolve(sourceDir, "node_modules")]);
  const newest = Math.max(newestMtimeMs(sourceDir, skip), ...workspaceSources.filter((dir) => existsSync(dir)).map((dir) => newestMtimeMs(dir, skip)));
  return newest > statSync(index).mtimeMs;
}

function newestMtimeMs(dir: string, skip: ReadonlySet<string>): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = resolve(dir, entry.name);
    if (skip.has(path)) continue;
    if (entry.isDirectory()) newest = Math.max(newest, newestMtimeMs(path, skip));
    else if (entry.isFile()) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

export async function ensureUiBuilt(distDir: string, log: Logger): Promise<void> {
  if (!uiNeedsBuild(distDir)) return;
  log.info({ distDir }, "web UI missing or older than its sources: building it now (vite build)");
  const code = await new Promise<number>((resolve) => {
    const child = spawn("pnpm", ["exec", "vite", "build", "--config", "ui/vite.config.ts"], { cwd: PACKAGE_DIR, stdio: "ignore" });
    child.on("exit", (c) => resolve(c ?? 1));
    child.on("error", () => resolve(1));
  });
  if (code === 0) log.info("web UI built");
  else log.error({ code }, "web UI build failed: run `pnpm --filter @agentrt/web-gateway build:ui`; the API still serves");
}
