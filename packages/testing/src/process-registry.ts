// Last-resort cleanup: every process the harness spawns (nats-server nodes, the services of the
// system tests) and every temp dir it creates is registered here and killed/removed when the test
// process ends, so a failing, aborted or timed-out test never leaves a server, a service or a
// store dir behind. Normal teardown unregisters them.
//
// Three ways a test process ends, three hooks: "exit" (normal end, `process.exit`); SIGTERM,
// SIGINT or SIGHUP (a runner ending its workers, Ctrl-C), which skip "exit"; and SIGKILL, which
// runs nothing at all. For the last, the first registration starts a reaper: a small node
// process holding the registered pids, fed over its stdin. When the test process dies by any
// means its end of the pipe closes, and the reaper kills whatever is still registered.

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const children = new Set<ChildProcess>();
const dirs = new Set<string>();
let hooked = false;
let reaper: ChildProcess | undefined;

// The reaper's whole program. It ignores the terminal's Ctrl-C until its parent is gone (the
// parent's own hook cleans up first), and exits once it has reaped.
const REAPER = `
const pids = new Set();
let pending = "";
const reap = () => {
  for (const pid of pids) {
    try { process.kill(pid, "SIGCONT"); process.kill(pid, "SIGKILL"); } catch {}
  }
  process.exit(0);
};
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  pending += chunk;
  for (let i = pending.indexOf("\\n"); i >= 0; i = pending.indexOf("\\n")) {
    const line = pending.slice(0, i);
    pending = pending.slice(i + 1);
    const pid = Number(line.slice(1));
    if (!Number.isInteger(pid) || pid <= 0) continue;
    if (line[0] === "+") pids.add(pid); else pids.delete(pid);
  }
});
process.stdin.on("end", reap);
process.stdin.on("error", reap);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => undefined);
`;

function tellReaper(line: string): void {
  if (reaper === undefined) {
    reaper = spawn(process.execPath, ["-e", REAPER], { stdio: ["pipe", "ignore", "ignore"] });
    reaper.on("error", () => undefined);
    reaper.stdin?.on("error", () => undefined);
    // Neither the reaper nor its pipe keeps the test process alive.
    reaper.unref();
    (reaper.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  }
  reaper.stdin?.write(`${line}\n`);
}

function cleanupAll(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        // A frozen (SIGSTOPped) process takes SIGKILL too; SIGCONT first is for its children's sake.
        child.kill("SIGCONT");
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  children.clear();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs.clear();
}

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.once("exit", cleanupAll);
  // A test runner may end its workers with a signal, which skips "exit": clean up, then let
  // the signal do what it would have done.
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    process.once(signal, () => {
      cleanupAll();
      process.kill(process.pid, signal);
    });
  }
}

/** Kills `child` when this process ends, however it ends (SIGKILL included), unless unregistered first. */
export function registerChild(child: ChildProcess): void {
  hook();
  children.add(child);
  if (child.pid !== undefined) {
    const pid = child.pid;
    tellReaper(`+${pid}`);
    // Once it has exited its pid may be reused: the reaper must forget it.
    child.once("exit", () => {
      children.delete(child);
      tellReaper(`-${pid}`);
    });
  }
}

export function unregisterChild(child: ChildProcess): void {
  children.delete(child);
  if (child.pid !== undefined) tellReaper(`-${child.pid}`);
}

export function registerDir(dir: string): void {
  hook();
  dirs.add(dir);
}

export function unregisterDir(dir: string): void {
  dirs.delete(dir);
}

/** A new temp dir named `<prefix>XXXXXX`, removed when this process ends (however a test ends). */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  registerDir(dir);
  return dir;
}
