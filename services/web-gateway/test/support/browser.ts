// Headless Chromium for browser tests: the system's /usr/bin/chromium driven by playwright-core
// (never a downloaded browser), and the UI built when its build is missing or older than its
// sources (a test never runs against a stale bundle).
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { uiNeedsBuild } from "../../src/ui-build.ts";
import { startTestGateway, type TestGateway } from "./gateway-harness.ts";
import { openTestStore, type TestStore } from "./store.ts";
import { scratchDir } from "@agentrt/testing";

const CHROMIUM = "/usr/bin/chromium";
export const UI_DIST = join(import.meta.dirname, "../../ui/dist");

/**
 * Where screenshots go: `docs/` (checked in, shown in the README) when AGENTRT_SCREENSHOTS=1,
 * otherwise a temp dir, so an ordinary test run leaves the working tree clean.
 */
export function screenshotPath(name: string): string {
  const dir = process.env.AGENTRT_SCREENSHOTS === "1" ? join(import.meta.dirname, "../../../../docs") : scratchDir("agentrt-shots-");
  return join(dir, name);
}

export function ensureUiBuilt(): string {
  if (uiNeedsBuild(UI_DIST)) {
    execFileSync("pnpm", ["exec", "vite", "build", "--config", "ui/vite.config.ts"], { cwd: join(import.meta.dirname, "../.."), stdio: "ignore" });
  }
  return UI_DIST;
}

function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", ...extraArgs],
  });
}

/** Chromium with one page open; close() ends the browser. */
export interface BrowserPage {
  readonly page: Page;
  close(): Promise<void>;
}

/** `extraArgs`: more Chromium switches, such as `--host-resolver-rules` to give a loopback server another site's name. */
export async function openBrowserPage(viewport?: { width: number; height: number }, extraArgs: readonly string[] = []): Promise<BrowserPage> {
  const browser = await launchChromium(extraArgs);
  const page = await browser.newPage(viewport === undefined ? {} : { viewport });
  return { page, close: () => browser.close() };
}

/** The UI (built if stale) served by a dev-mode gateway over a fresh JetStream test store, open in Chromium. */
export interface UiStack {
  readonly ts: TestStore;
  readonly gw: TestGateway;
  readonly page: Page;
  close(): Promise<void>;
}

export async function startUiStack(viewport?: { width: number; height: number }): Promise<UiStack> {
  const uiDistDir = ensureUiBuilt();
  const ts = await openTestStore();
  const gw = await startTestGateway({ store: ts.store, devMode: true, uiDistDir });
  const browser = await openBrowserPage(viewport);
  return {
    ts,
    gw,
    page: browser.page,
    async close() {
      await browser.close();
      await gw.close();
      await ts.close();
    },
  };
}
