// Summarises the CPU profiles a bench run wrote (`BENCH_PROFILE_DIR=<dir> pnpm bench peers …`,
// or any `node --cpu-prof` output): per profile, which service it is, how busy the process was,
// the garbage collector's share of its busy time, and the functions with the most self time and
// (what they and their callees took) the most total time. `--first 300` reads only the first
// 300 ms of each profile: a process's start-up, such as a driver restarted after a kill
// (`BENCH_PROFILE_DIR=<dir> pnpm bench recovery`).
//
//   pnpm -s tsx bench/profile-summary.ts <dir or .cpuprofile files…> [--top 15] [--first <ms>]

import { readFileSync, readdirSync, statSync } from "node:fs";
import { basename, join } from "node:path";

interface ProfileNode {
  readonly id: number;
  readonly children?: readonly number[];
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
  /** Functions by total time (their own and their callees'), as shares of the busy time. */
  readonly topTotal: ReadonlyArray<{ readonly name: string; readonly share: number }>;
}

/** What one profile says; `top` functions by self and by total time; `firstMs`: only the samples of its first ms. */
export function summarise(profile: CpuProfile, top: number, firstMs = Number.POSITIVE_INFINITY): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  // Each node's name, made once (a sample's whole stack is named below).
  const nameById = new Map(
    profile.nodes.map((node) => {
      const frame = node.callFrame;
      const where = frame.url === "" ? "" : ` ${frame.url.split("/").slice(-2).join("/")}:${frame.lineNumber + 1}`;
      return [node.id, `${frame.functionName === "" ? "(anonymous)" : frame.functionName}${where}`] as const;
    }),
  );
  const nameOf = (node: ProfileNode): string => nameById.get(node.id) as string;
  const selfUs = new Map<string, number>();
  const totalOfUs = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    if (totalUs >= firstMs * 1000) return;
    const delta = profile.timeDeltas[i] ?? 0;
    totalUs += delta;
    const node = byId.get(id);
    if (node === undefined) return;
    const name = nameOf(node);
    selfUs.set(name, (selfUs.get(name) ?? 0) + delta);
    // Each function on the sample's stack once (a recursive one is not counted twice).
    const onStack = new Set<string>();
    for (let at: ProfileNode | undefined = node; at !== undefined; at = byId.get(parentOf.get(at.id) ?? -1)) onStack.add(nameOf(at));
    for (const caller of onStack) totalOfUs.set(caller, (totalOfUs.get(caller) ?? 0) + delta);
  });
  const idleUs = selfUs.get("(idle)") ?? 0;
  const busyUs = Math.max(1, totalUs - idleUs);
  const services = new Set(profile.nodes.map((node) => /services\/([a-z-]+)\//.exec(node.callFrame.url)?.[1]).filter((s): s is string => s !== undefined));
  return {
    service: services.size === 0 ? "?" : [...services].sort().join("+"),
    totalMs: totalUs / 1000,
    busy: (totalUs - idleUs) / Math.max(1, totalUs),
    gcOfBusy: (selfUs.get("(garbage collector)") ?? 0) / busyUs,
    top: ranked(selfUs, top, busyUs),
    topTotal: ranked(totalOfUs, top, busyUs),
  };
}

/** The `top` busiest names (no idle time, no root), as shares of the busy time. */
function ranked(usByName: ReadonlyMap<string, number>, top: number, busyUs: number): ProfileSummary["top"] {
  return [...usByName]
    .filter(([name]) => name !== "(idle)" && name !== "(root)")
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => ({ name, share: us / busyUs }));
}

function profilesIn(args: readonly string[]): string[] {
  return args.flatMap((arg) => (statSync(arg).isDirectory() ? readdirSync(arg).filter((f) => f.endsWith(".cpuprofile")).sort().map((f) => join(arg, f)) : [arg]));
}

if (process.argv[1] !== undefined && basename(process.argv[1]).startsWith("profile-summary")) {
  const args = process.argv.slice(2);
  const option = (name: string): number | undefined => {
    const at = args.indexOf(name);
    return at === -1 ? undefined : Number(args[at + 1]);
  };
  const top = option("--top") ?? 15;
  const firstMs = option("--first");
  const optionAt = new Set(["--top", "--first"].flatMap((name) => (args.includes(name) ? [args.indexOf(name), args.indexOf(name) + 1] : [])));
  const paths = profilesIn(args.filter((_, i) => !optionAt.has(i)));
  if (paths.length === 0 || !Number.isInteger(top) || top < 1 || (firstMs !== undefined && !(firstMs > 0))) {
    process.stderr.write("usage: tsx bench/profile-summary.ts <dir or .cpuprofile files…> [--top 15 (a whole number ≥ 1)] [--first <ms> (> 0)]\n");
    process.exit(2);
  }
  for (const path of paths) {
    const s = summarise(JSON.parse(readFileSync(path, "utf8")) as CpuProfile, top, firstMs);
    const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
    const span = firstMs === undefined ? `${(s.totalMs / 1000).toFixed(1)} s` : `its first ${Math.round(s.totalMs)} ms`;
    process.stdout.write(`${basename(path)}: ${s.service}, ${span}, busy ${pct(s.busy)}, garbage collector ${pct(s.gcOfBusy)} of busy\n`);
    process.stdout.write("  self time:\n");
    for (const f of s.top) process.stdout.write(`  ${pct(f.share).padStart(7)}  ${f.name}\n`);
    process.stdout.write("  total time (with callees):\n");
    for (const f of s.topTotal) process.stdout.write(`  ${pct(f.share).padStart(7)}  ${f.name}\n`);
  }
}
