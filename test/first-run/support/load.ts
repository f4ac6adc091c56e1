// Background CPU load for the first-run test, as in issue #13: two loops of the project's own
// typecheck plus busy loops. Each loop is its own process group, so stopping kills exactly the
// processes it started (and their children); each also ends by itself when the test process dies.

import { type ChildProcess, spawn } from "node:child_process";
import { loadavg } from "node:os";
import { join } from "node:path";

export interface LoadGenerator {
  /** The 1-minute load average now. */
  readonly load1: () => number;
  readonly running: () => number;
  stop(): Promise<void>;
}

export function startLoad(options: { repoRoot: string; typecheckLoops: number; busyLoops: number }): LoadGenerator {
  const tsc = join(options.repoRoot, "node_modules", ".bin", "tsc");
  const loops: ChildProcess[] = [];
  for (let i = 0; i < options.typecheckLoops; i++) {
    loops.push(
      spawn("bash", ["-c", `while kill -0 ${process.pid} 2>/dev/null; do "${tsc}" -p tsconfig.json --noEmit >/dev/null 2>&1; done`], {
        cwd: options.repoRoot,
        detached: true,
        stdio: "ignore",
      }),
    );
  }
  // A loop ends by itself once the test process is gone (killed runs must not leave the machine busy).
  const busy = `const owner = ${process.pid}; for (let i = 0; ; i++) if ((i & 0x3ffffff) === 0) try { process.kill(owner, 0); } catch { process.exit(0); }`;
  for (let i = 0; i < options.busyLoops; i++) loops.push(spawn(process.execPath, ["-e", busy], { detached: true, stdio: "ignore" }));
  return {
    load1: () => loadavg()[0]!,
    running: () => loops.filter((p) => p.exitCode === null && p.signalCode === null).length,
    async stop() {
      await Promise.all(
        loops.map(async (p) => {
          if (p.exitCode !== null || p.signalCode !== null || p.pid === undefined) return;
          const exited = new Promise((resolve) => p.once("exit", resolve));
          try {
            process.kill(-p.pid, "SIGKILL");
          } catch {
            // already gone
          }
          await exited;
        }),
      );
    },
  };
}
