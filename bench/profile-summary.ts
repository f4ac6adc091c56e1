// Summarises the CPU profiles a bench run wrote (`BENCH_PROFILE_DIR=<dir> pnpm bench peers …`,
// or any `node --cpu-prof` output): per profile, which service it is, how busy the process was,
// the garbage collector's share of its busy time, and the functions with the most self time.
//
//   pnpm -s tsx bench/profile-summary.ts <dir or .cpuprofile files…> [--top 15]

import { readFileSync, readdirSync, statSync } from "node:fs";
import { basename, join } from "node:path";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ProfileSummary {
  readonly service: string;
  readonly totalMs: number;
  /** Share of the wall time spent outside `(idle)`. */
  readonly busy: number;
  /** The garbage collector's share of the busy time. */
  readonly gcOfBusy: number;
  /** Functions by self time, as shares of the busy time. */
  readonly top: ReadonlyArray<{ readonly name: string; readonly share: number }>;
}

/** What one profile says; `top` functions by self time. */
export function summarise(profile: CpuProfile, top: number): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    totalUs += delta;
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) return;
    const where = frame.url === "" ? "" : ` ${frame.url.split("/").slice(-2).join("/")}:${frame.lineNumber + 1}`;
    const name = `${frame.functionName === "" ? "(anonymous)" : frame.functionName}${where}`;
    selfUs.set(name, (selfUs.get(name) ?? 0) + delta);
  });
  const idleUs = selfUs.get("(idle)") ?? 0;
  const busyUs = Math.max(1, totalUs - idleUs);
  const services = new Set(profile.nodes.map((node) => /services\/([a-z-]+)\//.exec(node.callFrame.url)?.[1]).filter((s): s is string => s !== undefined));
  return {
    service: services.size === 0 ? "?" : [...services].sort().join("+"),
    totalMs: totalUs / 1000,
    busy: (totalUs - idleUs) / Math.max(1, totalUs),
    gcOfBusy: (selfUs.get("(garbage collector)") ?? 0) / busyUs,
    top: [...selfUs]
      .filter(([name]) => name !== "(idle)")
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, share: us / busyUs })),
  };
}

function profilesIn(args: readonly string[]): string[] {
  return args.flatMap((arg) => (statSync(arg).isDirectory() ? readdirSync(arg).filter((f) => f.endsWith(".cpuprofile")).sort().map((f) => join(arg, f)) : [arg]));
}

if (process.argv[1] !== undefined && basename(process.argv[1]).startsWith("profile-summary")) {
  const args = process.argv.slice(2);
  const topAt = args.indexOf("--top");
  const top = topAt === -1 ? 15 : Number(args[topAt + 1]);
  const paths = profilesIn(args.filter((_, i) => i !== topAt && i !== topAt + 1));
  if (paths.length === 0) {
    process.stderr.write("usage: tsx bench/profile-summary.ts <dir or .cpuprofile files…> [--top 15]\n");
    process.exit(2);
  }
  for (const path of paths) {
    const s = summarise(JSON.parse(readFileSync(path, "utf8")) as CpuProfile, top);
    const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
    process.stdout.write(`${basename(path)}: ${s.service}, ${(s.totalMs / 1000).toFixed(1)} s, busy ${pct(s.busy)}, garbage collector ${pct(s.gcOfBusy)} of busy\n`);
    for (const f of s.top) process.stdout.write(`  ${pct(f.share).padStart(7)}  ${f.name}\n`);
  }
}
