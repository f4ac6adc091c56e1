// A fresh clone of this repository (committed files only, as a new user gets them) in a temp
// dir, installed from the local package store. The first-run tests start from one of these.

import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
export const REPO_ROOT = join(import.meta.dirname, "..", "..", "..");

export interface FreshClone {
  readonly dir: string;
  /**
   * Removes the clone and everything installed in it. Asynchronous on purpose: a synchronous
   * removal of an installed clone (tens of thousands of files) held the test process's event
   * loop for ~15 s under load, and a start running beside it then saw its HTTP calls time out
   * and its stack's exit arrive 18–20 s after SIGTERM (CI, 2026-12-02).
   */
  remove(): Promise<void>;
}

export async function freshClone(): Promise<FreshClone> {
  const parent = mkdtempSync(join(tmpdir(), "agentrt-clone-"));
  const dir = join(parent, "agentrt");
  await run("git", ["clone", "--quiet", "--no-hardlinks", REPO_ROOT, dir]);
  return { dir, remove: () => rm(parent, { recursive: true, force: true }) };
}

/** `pnpm install --frozen-lockfile --offline` in `dir`; returns everything it printed. */
export async function installFromStore(dir: string): Promise<string> {
  const { stdout, stderr } = await run("pnpm", ["install", "--frozen-lockfile", "--offline"], {
    cwd: dir,
    env: { ...process.env, CI: "1", FORCE_COLOR: "0" },
    maxBuffer: 16 * 1024 * 1024,
  });
  return `${stdout}\n${stderr}`;
}
