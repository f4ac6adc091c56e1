// What the process-level benchmarks share: their numeric arguments, percentiles, a process's
// resident memory, a bounded-concurrency loop and building the services' bundles.

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** `--name N` from the command line, or the fallback. */
export function numberArg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** A process's resident set size in KiB (from /proc), NaN when it is unknown. */
export function rssKiB(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) : NaN;
}

/** Runs `work` over `items` with at most `limit` at a time. */
export async function pool<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        await work(items[i]!, i);
      }
    }),
  );
}

/** Builds the services' bundles from the current sources (scripts/build-services.ts), as the quickstart runs them. */
export function buildServiceBundles(): void {
  const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
  const built = spawnSync(process.execPath, ["--import", "tsx", join(repoRoot, "scripts", "build-services.ts")], { cwd: repoRoot, stdio: "inherit" });
  if (built.status !== 0) throw new Error("building the service bundles failed (scripts/build-services.ts)");
}

/**
 * Node options the benches start agentrt's services with: BENCH_PROFILE_DIR=/tmp/prof makes each
 * write a CPU profile there when it exits on its own (so stop it with SIGTERM, not the harness's
 * SIGKILL); BENCH_NODE_ARGS="--max-semi-space-size=32" adds options of your own.
 */
export function serviceNodeArgs(): { readonly args: readonly string[]; readonly profiling: boolean } {
  const profileDir = process.env.BENCH_PROFILE_DIR;
  const args = [
    ...(profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]),
    ...(process.env.BENCH_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== ""),
  ];
  return { args, profiling: profileDir !== undefined };
}
