// The system harness's own promise to the tests that use it: a system that fails to start leaves
// nothing running behind it — not its nats-server, not the services that did start. (A soak whose
// start-up failed had left its processes running until the test process ended.)

import { readFileSync, readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { startSystem } from "../support/system.ts";

/** Live (non-zombie) processes whose parent is this test process, the registry's reaper aside. */
function liveChildren(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(ppid) !== process.pid || state === "Z") continue;
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes("const pids = new Set()")) continue;
      pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids.sort((a, b) => a - b);
}

describe("startSystem", () => {
  it("stops what it started when a service fails at start-up", async () => {
    // Given no children yet
    const before = liveChildren();
    // When the reducer cannot start (its partition count breaks the config's rule) while the
    // nats-server and the driver do
    const failure = await startSystem({ reducers: 1, drivers: 1, envFor: (service): Record<string, string> => (service === "agent-reducer" ? { PARTITION_COUNT: "0" } : {}) }).then(
      () => undefined,
      (error: unknown) => error,
    );
    // Then start-up fails naming the reducer, and nothing it started is left running
    expect(String(failure)).toMatch(/reducer-1 exited/);
    expect(liveChildren()).toEqual(before);
  }, 180_000);
});
