// An example capability provider: `itx.repo`, backed by a local git repository (log, files,
// read — each a `git` child process) and by a folder of pull-request JSON records
// (`listPulls`). It is a separate process; the host learns its methods and types at run time.

import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { CapabilityProviderOptions } from "@agentrt/capability-sdk";
import { z } from "zod";

const run = promisify(execFile);

export const REPO_DECLARATIONS = `
/** A pull request record. */
interface RepoPull {
  number: number;
  title: string;
  state: "open" | "closed";
  author: string;
  branch?: string;
  createdAt?: string;
}

interface RepoCommit {
  oid: string;
  author: string;
  date: string;
  subject: string;
}

/** The project's git repository (example provider "repo"). */
interface RepoCapability {
  /** Newest commits first (default 20, at most 200). */
  log(args?: { limit?: number; ref?: string }): Promise<RepoCommit[]>;
  /** Paths of the files at a ref (default HEAD), optionally under a folder. */
  files(args?: { ref?: string; under?: string }): Promise<string[]>;
  /** A file's text at a ref (default HEAD). */
  read(args: { path: string; ref?: string }): Promise<string>;
  /** Pull requests, filtered by state (default "open"). */
  listPulls(args?: { state?: "open" | "closed" | "all" }): Promise<RepoPull[]>;
}

interface Itx {
  repo: RepoCapability;
}
`;

const pullSchema = z.looseObject({
  number: z.number().int(),
  title: z.string(),
  state: z.enum(["open", "closed"]),
  author: z.string(),
});

const REF = /^[A-Za-z0-9._/-]{1,200}$/;

function argsOf(args: readonly unknown[]): Record<string, unknown> {
  const first = args[0];
  if (first === undefined) return {};
  if (typeof first !== "object" || first === null || Array.isArray(first)) throw new Error("expected one object argument");
  return first as Record<string, unknown>;
}

function refOf(value: unknown): string {
  if (value === undefined) return "HEAD";
  if (typeof value !== "string" || !REF.test(value) || value.startsWith("-")) throw new Error(`ref ${JSON.stringify(value)} is not a valid ref`);
  return value;
}

function relativePath(value: unknown, what: string): string {
  if (typeof value !== "string" || value.length === 0 || value.startsWith("/") || value.startsWith("-") || value.split("/").includes("..")) {
    throw new Error(`${what} must be a relative path inside the repository`);
  }
  return value;
}

export interface RepoProviderOptions {
  readonly repoDir: string;
  readonly pullsDir: string;
}

export function repoProvider(options: RepoProviderOptions): Omit<CapabilityProviderOptions, "ttlMs" | "registerTimeoutMs" | "retry" | "log" | "signal" | "onError"> {
  const git = async (...args: string[]): Promise<string> => (await run("git", args, { cwd: options.repoDir, maxBuffer: 16 * 1024 * 1024 })).stdout;
  return {
    namespace: "repo",
    declarations: REPO_DECLARATIONS,
    methods: {
      async log(args) {
        const a = argsOf(args);
        const limit = typeof a.limit === "number" ? Math.max(1, Math.min(200, Math.floor(a.limit))) : 20;
        const out = await git("log", `--max-count=${limit}`, "--format=%H%x1f%an%x1f%aI%x1f%s", refOf(a.ref), "--");
        return out.split("\n").filter(Boolean).map((line) => {
          const [oid, author, date, subject] = line.split("\x1f");
          return { oid, author, date, subject };
        });
      },
      async files(args) {
        const a = argsOf(args);
        const under = a.under === undefined ? [] : ["--", relativePath(a.under, "under")];
        return (await git("ls-tree", "-r", "--name-only", refOf(a.ref), ...under)).split("\n").filter(Boolean);
      },
      async read(args) {
        const a = argsOf(args);
        return git("show", `${refOf(a.ref)}:${relativePath(a.path, "path")}`);
      },
      async listPulls(args) {
        const a = argsOf(args);
        const state = a.state ?? "open";
        if (state !== "open" && state !== "closed" && state !== "all") throw new Error('state must be "open", "closed" or "all"');
        const names = (await readdir(options.pullsDir)).filter((n) => n.endsWith(".json")).sort();
        const pulls = await Promise.all(names.map(async (n) => pullSchema.parse(JSON.parse(await readFile(join(options.pullsDir, n), "utf8")))));
        return pulls.filter((p) => state === "all" || p.state === state).sort((x, y) => x.number - y.number);
      },
    },
  };
}
