// Capability host readiness (issue #13 "Fast readiness"): process start → first 200 from the
// ops port's `/readyz`, for the host as a real process (tsx, like the quickstart) against a
// harness-started nats-server, with `node -e 0` as the floor in the same run.
//
// Run: pnpm exec tsx bench/host/readiness.bench.ts [--runs 5] [--main path/to/main.ts]
// (`--main`: another build of the host, e.g. an older commit's sources, for a before/after.)

import { spawn, spawnSync } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { freeLoopbackPort, startNatsServer } from "@agentrt/testing";

const argIndex = process.argv.indexOf("--runs");
const RUNS = argIndex > 0 ? Number(process.argv[argIndex + 1]) : 5;
const mainIndex = process.argv.indexOf("--main");
const HOST_MAIN = mainIndex > 0 ? String(process.argv[mainIndex + 1]) : fileURLToPath(new URL("../../services/capability-host/src/main.ts", import.meta.url));

async function readyOnce(natsUrl: string): Promise<number> {
  const port = await freeLoopbackPort();
  const t0 = performance.now();
  const child = spawn(process.execPath, ["--import", "tsx", HOST_MAIN], {
    env: { ...process.env, NATS_URL: natsUrl, OPS_PORT: String(port), PARTITION_COUNT: "4", LOG_LEVEL: "warn" },
    stdio: "ignore",
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`host exited with ${child.exitCode}`);
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false);
      if (ok) return performance.now() - t0;
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
  }
}

const server = await startNatsServer();
const floor: number[] = [];
const ready: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  spawnSync(process.execPath, ["-e", "0"]);
  floor.push(performance.now() - t0);
  ready.push(await readyOnce(server.url));
}
await server.stop();
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
console.log(`Command: \`pnpm exec tsx bench/host/readiness.bench.ts --runs ${RUNS}\` — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC; load average ${loadavg().map((l) => l.toFixed(1)).join(", ")}.`);
console.log(`| measure (ms) | runs | median | max |`);
console.log(`|---|---:|---:|---:|`);
console.log(`| \`node -e 0\` (floor) | ${RUNS} | ${median(floor).toFixed(0)} | ${Math.max(...floor).toFixed(0)} |`);
console.log(`| capability host start → /readyz 200 | ${RUNS} | ${median(ready).toFixed(0)} | ${Math.max(...ready).toFixed(0)} |`);
process.exit(0);
