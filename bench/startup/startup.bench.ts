// Start-up benchmark (issue #13): process start → /readyz for each service, and `./scripts/up.sh`
// → its "ready" line for the whole stack, on a warm install, next to the floor measured in the
// same run: `node -e 0` and a bare tsx hello. Each service runs as its own process the way the
// quickstart runs it (from its precompiled bundle, scripts/build-services.ts) and, for comparison, from source through tsx, against a harness nats-server; the
// stack runs against another, with free loopback ports. Builds the bundles first.
//
// Run: pnpm exec tsx bench/startup/startup.bench.ts [--runs 5]

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { freeLoopbackPorts, natsServerBinary, startNatsServer } from "@agentrt/testing";
import { describeMachine } from "../store/machine.ts";

const argIndex = process.argv.indexOf("--runs");
const RUNS = argIndex > 0 ? Number(process.argv[argIndex + 1]) : 5;
const ROOT = join(import.meta.dirname, "..", "..");
const SERVICES = ["agent-reducer", "llm-driver", "capability-host", "web-gateway"] as const;

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const max = (v: number[]) => Math.max(...v);

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once("exit", () => resolve()));
}

/** Wall time of a process that runs to completion. */
async function timeToExit(command: string, args: string[]): Promise<number> {
  const t0 = performance.now();
  const child = spawn(command, args, { cwd: ROOT, stdio: "ignore" });
  await exited(child);
  if (child.exitCode !== 0) throw new Error(`${command} ${args.join(" ")} exited ${child.exitCode}`);
  return performance.now() - t0;
}

async function readyz(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(500) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** "uncached": the bundle compiled from source (AGENTRT_CODE_CACHE=off), the code cache's baseline. */
type Mode = "bundle" | "uncached" | "source";
const bundleOf = (service: string) => join(ROOT, "services", service, "src", "main.bundle.mjs");
const hasBundle = (service: string) => existsSync(bundleOf(service));

/** Process start → first 200 from /readyz, then SIGTERM and wait for the exit. */
async function timeServiceReady(service: string, natsUrl: string, mode: Mode): Promise<number> {
  const [ops, http, grpc] = (await freeLoopbackPorts(3)) as [number, number, number];
  const env = {
    ...process.env,
    NATS_URL: natsUrl,
    OPS_PORT: String(ops),
    HTTP_PORT: String(http),
    GRPC_PORT: String(grpc),
    AGENTRT_DEV_MODE: "1",
    UI_BUILD_ON_START: "0",
    LOG_LEVEL: "warn",
    ...(mode === "uncached" ? { AGENTRT_CODE_CACHE: "off" } : {}),
  };
  const t0 = performance.now();
  const args = mode === "source" ? ["--import", "tsx", join(ROOT, "services", service, "src", "main.ts")] : [bundleOf(service)];
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: "ignore" });
  try {
    while (!(await readyz(ops))) {
      if (child.exitCode !== null) throw new Error(`${service} exited ${child.exitCode} before ready`);
      if (performance.now() - t0 > 120_000) throw new Error(`${service} not ready in 120 s`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return performance.now() - t0;
  } finally {
    child.kill("SIGTERM");
    await exited(child);
  }
}

/** `./scripts/up.sh` → its "[stack] ready" line, then SIGTERM and wait for a clean stop. */
async function timeStackReady(natsUrl: string): Promise<number> {
  const ports = (await freeLoopbackPorts(6)).map(String);
  const env = {
    ...process.env,
    NATS_URL: natsUrl,
    HTTP_PORT: ports[0],
    GRPC_PORT: ports[1],
    REDUCER_OPS_PORT: ports[2],
    DRIVER_OPS_PORT: ports[3],
    HOST_OPS_PORT: ports[4],
    GATEWAY_OPS_PORT: ports[5],
    LOG_LEVEL: "warn",
    FORCE_COLOR: "0",
  };
  const t0 = performance.now();
  const child = spawn("./scripts/up.sh", [], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  try {
    return await new Promise<number>((resolve, reject) => {
      child.stdout?.on("data", (d: Buffer) => {
        out += d.toString();
        if (/\[stack\]\S* ready in/.test(out)) resolve(performance.now() - t0);
      });
      child.once("exit", (code) => reject(new Error(`up.sh exited ${code} before ready:\n${out.slice(-2_000)}`)));
    });
  } finally {
    child.kill("SIGTERM");
    await exited(child);
  }
}

async function main(): Promise<void> {
  execFileSync(join(ROOT, "node_modules", ".bin", "tsx"), [join(ROOT, "scripts", "build-services.ts")], { cwd: ROOT, stdio: "inherit" });
  const loadBefore = loadavg();
  const started = new Date();
  const natsForServices = await startNatsServer();
  const natsForStack = await startNatsServer();
  // Warm-up: one untimed start of everything (tsx's transform cache, the OS page cache, the streams).
  for (const s of SERVICES) await timeServiceReady(s, natsForServices.url, hasBundle(s) ? "bundle" : "source");
  await timeStackReady(natsForStack.url);

  const rows: Array<[string, number[]]> = [];
  const floorNode: number[] = [];
  const floorTsx: number[] = [];
  const perService: Record<string, number[]> = Object.fromEntries(SERVICES.map((s) => [s, []]));
  const fromSource: Record<string, number[]> = Object.fromEntries(SERVICES.filter(hasBundle).map((s) => [s, []]));
  const uncached: Record<string, number[]> = Object.fromEntries(SERVICES.filter(hasBundle).map((s) => [s, []]));
  const stack: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    // Interleaved, so a burst of load from elsewhere touches every row alike.
    floorNode.push(await timeToExit(process.execPath, ["-e", "0"]));
    floorTsx.push(await timeToExit(process.execPath, ["--import", "tsx", join(import.meta.dirname, "hello.ts")]));
    for (const s of SERVICES) perService[s]!.push(await timeServiceReady(s, natsForServices.url, hasBundle(s) ? "bundle" : "source"));
    for (const s of Object.keys(uncached)) uncached[s]!.push(await timeServiceReady(s, natsForServices.url, "uncached"));
    for (const s of Object.keys(fromSource)) fromSource[s]!.push(await timeServiceReady(s, natsForServices.url, "source"));
    stack.push(await timeStackReady(natsForStack.url));
  }
  rows.push(["`node -e 0` (floor)", floorNode], ["tsx hello (floor)", floorTsx]);
  for (const s of SERVICES) rows.push([`${s}: start → /readyz${hasBundle(s) ? " (bundle, as the stack runs it)" : " (source)"}`, perService[s]!]);
  for (const s of Object.keys(uncached)) rows.push([`${s}: start → /readyz (bundle compiled from source, \`AGENTRT_CODE_CACHE=off\`)`, uncached[s]!]);
  for (const s of Object.keys(fromSource)) rows.push([`${s}: start → /readyz from source via tsx`, fromSource[s]!]);
  rows.push(["whole stack: `./scripts/up.sh` → ready", stack]);
  await natsForServices.stop();
  await natsForStack.stop();

  const floor = median(floorTsx);
  const fmt = (ms: number) => (ms / 1000).toFixed(2);
  process.stdout.write(
    [
      `Command: \`pnpm exec tsx bench/startup/startup.bench.ts --runs ${RUNS}\` — ${started.toISOString().slice(0, 16).replace("T", " ")} UTC.`,
      `Machine: ${describeMachine(natsServerBinary())}. Load average before: ${loadBefore.map((l) => l.toFixed(1)).join(", ")}; after: ${loadavg().map((l) => l.toFixed(1)).join(", ")}.`,
      "",
      "| measure (s) | n | median | max | median ÷ tsx floor |",
      "|---|---:|---:|---:|---:|",
      ...rows.map(([name, v]) => `| ${name} | ${v.length} | ${fmt(median(v))} | ${fmt(max(v))} | ${(median(v) / floor).toFixed(1)}× |`),
      "",
    ].join("\n"),
  );
}

await main();
