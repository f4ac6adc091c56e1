// Builds the web UI on first start when its dist folder is missing, so a fresh clone serves
// a UI without a separate step; a failed build leaves the "not built" page in place.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "@agentrt/service-kit";

export const PACKAGE_DIR = join(import.meta.dirname, "..");
export const DEFAULT_UI_DIST = join(PACKAGE_DIR, "ui", "dist");

export async function ensureUiBuilt(distDir: string, log: Logger): Promise<void> {
  if (existsSync(join(distDir, "index.html"))) return;
  log.info({ distDir }, "web UI not built yet: building it now (vite build)");
  const code = await new Promise<number>((resolve) => {
    const child = spawn("pnpm", ["exec", "vite", "build", "--config", "ui/vite.config.ts"], { cwd: PACKAGE_DIR, stdio: "ignore" });
    child.on("exit", (c) => resolve(c ?? 1));
    child.on("error", () => resolve(1));
  });
  if (code === 0) log.info("web UI built");
  else log.error({ code }, "web UI build failed: run `pnpm --filter @agentrt/web-gateway build:ui`; the API still serves");
}
