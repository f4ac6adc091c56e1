// A fresh clone of this repository (committed files only, as a new user gets them) in a temp
// dir, installed from the local package store. The first-run tests start from one of these.

import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
export const REPO_ROOT = join(import.meta.dirname, "..", "..", "..");

export interface FreshClone {
  readonly dir: string;
  remove(): void;
}

export async function freshClone(): Promise<FreshClone> {
  const parent = mkdtempSync(join(tmpdir(), "agentrt-clone-"));
  const dir = join(parent, "agentrt");
  await run("git", ["clone", "--quiet", "--no-hardlinks", REPO_ROOT, dir]);
  return { dir, remove: () => rmSync(parent, { recursive: true, force: true }) };
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
