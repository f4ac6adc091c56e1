// The process registry's promise: a test process that dies, however it dies, takes the processes
// it registered with it. SIGKILL runs no handler in the dying process, so this is the reaper's
// work (a soak that timed out had left sixteen service processes running).

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitFor } from "../src/nats/wait.ts";

const fixture = join(import.meta.dirname, "fixtures", "registering-parent.ts");

/** Alive: the pid exists and is not a zombie (an orphan's zombie waits for init, which may never reap it here). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

async function startParent(): Promise<{ parent: ReturnType<typeof spawn>; childPid: number }> {
  const parent = spawn(process.execPath, ["--import", "tsx", fixture], { stdio: ["ignore", "pipe", "inherit"] });
  const childPid = await new Promise<number>((resolve, reject) => {
    let out = "";
    parent.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const match = /child (\d+)\n/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    parent.once("exit", (code) => reject(new Error(`the fixture exited (${code}) before printing its child`)));
  });
  return { parent, childPid };
}

describe("process registry", () => {
  for (const signal of ["SIGKILL", "SIGTERM"] as const) {
    it(`kills a registered child when its test process is ended by ${signal}`, async () => {
      // Given a test process with a registered child
      const { parent, childPid } = await startParent();
      expect(alive(childPid)).toBe(true);
      try {
        // When the test process is ended by the signal
        const exited = new Promise((resolve) => parent.once("exit", resolve));
        parent.kill(signal);
        await exited;
        // Then the child is gone too, within a few seconds
        await waitFor(() => !alive(childPid), { timeoutMs: 5_000, intervalMs: 50, what: `child ${childPid} gone after its parent's ${signal}` });
      } finally {
        if (alive(childPid)) process.kill(childPid, "SIGKILL");
      }
    }, 30_000);
  }
});
