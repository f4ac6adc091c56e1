// Last-resort cleanup: every nats-server the harness spawns and every temp dir it creates is
// registered here and killed/removed when the test process exits (normally or by SIGTERM,
// SIGINT or SIGHUP), so a failing or aborted test file never leaves a server or a store dir
// behind. Normal teardown unregisters them.

import type { ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";

const children = new Set<ChildProcess>();
const dirs = new Set<string>();
let hooked = false;

function cleanupAll(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
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

export function registerChild(child: ChildProcess): void {
  hook();
  children.add(child);
}

export function unregisterChild(child: ChildProcess): void {
  children.delete(child);
}

export function registerDir(dir: string): void {
  hook();
  dirs.add(dir);
}

export function unregisterDir(dir: string): void {
  dirs.delete(dir);
}
