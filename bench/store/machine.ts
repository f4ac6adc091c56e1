// The machine a benchmark ran on, for the record in BENCHMARKS.md.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";

export function describeMachine(natsServerBinary: string | undefined): string {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const model = /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1]?.trim() ?? "unknown CPU";
  const memKb = Number(/MemTotal:\s*(\d+)/.exec(readFileSync("/proc/meminfo", "utf8"))?.[1] ?? 0);
  let nats = "unknown";
  if (natsServerBinary !== undefined) {
    try {
      nats = execFileSync(natsServerBinary, ["--version"], { encoding: "utf8" }).trim();
    } catch {
      // keep "unknown"
    }
  }
  return `nproc ${availableParallelism()}, ${model}, ${(memKb / 1024 / 1024).toFixed(1)} GiB RAM, Node ${process.version}, ${nats}`;
}
