// The system harness's own promise to the tests that use it: a system that fails to start leaves
// nothing running behind it — not its nats-server, not the services that did start. (A soak whose
// start-up failed had left its processes running until the test process ended.) And one that
// hangs says where each service stands, before the test's own hook timeout would cut it short
// with nothing to show (an e2e start-up once timed out that way in CI, and no one could say why).

import { readFileSync, readdirSync } from "node:fs";
import { FIRST_CONNECT_NOTICE_MS } from "@agentrt/service-kit";
import { freeLoopbackPort } from "@agentrt/testing";
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

  it("gives up within its start-up timeout and names each service's state when one never turns ready", async () => {
    const before = liveChildren();
    // Given a reducer whose NATS answers nowhere (nothing listens on the port), beside a driver that is fine
    const nowhere = `nats://127.0.0.1:${await freeLoopbackPort()}`;
    // Long enough for the reducer to start cold on a loaded machine and then wait out its first
    // notice's delay: with 3 s to spare, a busy CI run once ended before it had printed anything.
    const startupTimeoutMs = FIRST_CONNECT_NOTICE_MS + 10_000;
    const startedAt = Date.now();
    const failure = await startSystem({
      reducers: 1,
      drivers: 1,
      startupTimeoutMs,
      envFor: (service): Record<string, string> => (service === "agent-reducer" ? { NATS_URL: nowhere } : {}),
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    // Then start-up fails at its own deadline (not a hook's), with every service's state: the
    // reducer running but unready, its /readyz saying it is starting (its ops endpoint opens
    // before NATS answers), and its log saying it waits for NATS
    const text = String(failure);
    expect(Date.now() - startedAt).toBeLessThan(60_000);
    expect(text).toContain(`the system was not ready within ${startupTimeoutMs} ms`);
    expect(text).toMatch(/--- reducer-1: running \d+ ms, not ready; \/readyz: 503 not ready; unmet: start-up \(connecting to NATS and opening its streams\)/);
    expect(text).toContain("NATS has not answered yet; still trying to connect");
    expect(text).toContain("--- driver-1: ready");
    expect(liveChildren()).toEqual(before);
  }, 180_000);
});
