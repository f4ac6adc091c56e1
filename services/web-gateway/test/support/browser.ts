// Headless Chromium for browser tests: the system's /usr/bin/chromium driven by playwright-core
// (never a downloaded browser), and the UI built once when its dist folder is missing.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
export const UI_DIST = join(import.meta.dirname, "../../ui/dist");

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
