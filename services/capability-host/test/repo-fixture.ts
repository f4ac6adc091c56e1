// A throwaway git repository with a README and a folder of pull-request records (7 open,
// 2 closed), and the example repo provider started as its own process against it.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export interface RepoFixture {
  readonly repoDir: string;
  readonly pullsDir: string;
  remove(): void;
}

export function makeRepoFixture(openPulls = 7, closedPulls = 2): RepoFixture {
  const root = mkdtempSync(join(tmpdir(), "agentrt-repo-"));
  const repoDir = join(root, "repo");
  const pullsDir = join(root, "pulls");
  mkdirSync(repoDir);
  mkdirSync(pullsDir);
  const git = (...args: string[]) => execFileSync("git", args, { cwd: repoDir, stdio: "pipe" });
  git("init", "-q", "-b", "main");
  writeFileSync(join(repoDir, "README.md"), "# demo repo\n");
  git("add", "README.md");
  git("-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "Initial commit");
  let n = 0;
  for (const state of [...Array<"open">(openPulls).fill("open"), ...Array<"closed">(closedPulls).fill("closed")]) {
    n++;
    writeFileSync(join(pullsDir, `${n}.json`), JSON.stringify({ number: n, title: `Change ${n}`, state, author: "dev" }));
  }
  return { repoDir, pullsDir, remove: () => rmSync(root, { recursive: true, force: true }) };
}

const PROVIDER_MAIN = fileURLToPath(new URL("../../../examples/repo-provider/src/main.ts", import.meta.url));

/** Starts examples/repo-provider as a child process; resolves once it has registered. */
export async function startRepoProviderProcess(natsUrl: string, fixture: RepoFixture): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", PROVIDER_MAIN], {
    env: { ...process.env, NATS_URL: natsUrl, REPO_DIR: fixture.repoDir, PULLS_DIR: fixture.pullsDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`repo provider did not register in time: ${stderr}`)), 30_000);
    child.stdout?.on("data", (d: Buffer) => {
      if (d.toString().includes("repo-provider ready")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`repo provider exited with ${code}: ${stderr}`));
    });
  });
  return child;
}
