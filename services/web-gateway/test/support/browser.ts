// Headless Chromium for browser tests: the system's /usr/bin/chromium driven by playwright-core
// (never a downloaded browser), and the UI built once when its dist folder is missing.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
export const UI_DIST = join(import.meta.dirname, "../../ui/dist");

/**
 * Where screenshots go: `docs/` (checked in, shown in the README) when AGENTRT_SCREENSHOTS=1,
 * otherwise a temp dir, so an ordinary test run leaves the working tree clean.
 */
export function screenshotPath(name: string): string {
  const dir = process.env.AGENTRT_SCREENSHOTS === "1" ? join(import.meta.dirname, "../../../../docs") : mkdtempSync(join(tmpdir(), "agentrt-shots-"));
  return join(dir, name);
}

export function ensureUiBuilt(): string {
  if (!existsSync(join(UI_DIST, "index.html"))) {
    execFileSync("pnpm", ["exec", "vite", "build", "--config", "ui/vite.config.ts"], { cwd: join(import.meta.dirname, "../.."), stdio: "ignore" });
  }
  return UI_DIST;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"],
  });
}
