// A typecheck bomb against a capability host process (issue #12 item 2): 16 kB of recursive
// type aliases that hold a checker for minutes. The host's checker runs in worker threads
// (terminated once a check has used its budget of CPU), so the bomb settles `typecheck` within budget + 1 s, another
// agent's `return 2` settles within 1 s meanwhile, `/healthz` answers within 100 ms
// throughout, and a fresh checker serves the next script. Also: readiness does not wait for
// the checkers to warm (scripts do).

import type { AgentEvent } from "@agentrt/contract";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CapabilityHost } from "../src/index.ts";
import { typeBomb } from "./fixtures/type-bomb.ts";
import { startHostProcess, type HostProcess } from "./host-process.ts";
import { eventsOf, type HostFixture, requestScript, silentLogger, startFixture, uniquePath, waitSettled } from "./harness.ts";

let fx: HostFixture;
let host: HostProcess | undefined;
beforeAll(async () => {
  fx = await startFixture({ startHost: false });
});
afterAll(async () => {
  await host?.kill();
  await fx?.stop();
});

/** `agentrt_nodejs_eventloop_lag_max_seconds` from the host's /metrics, in ms (the maximum since the last scrape). */
async function eventLoopLagMaxMs(opsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text();
  const line = text.split("\n").find((l) => /^agentrt_nodejs_eventloop_lag_max_seconds[ {]/.test(l));
  if (line === undefined) throw new Error("the host's /metrics has no agentrt_nodejs_eventloop_lag_max_seconds");
  return Number(line.split(" ").at(-1)) * 1000;
}

type Settled = Extract<AgentEvent, { type: "capability-host/script-run-settled" }>;
async function roundTripMs(path: string, settled: Settled): Promise<number> {
  const requested = (await eventsOf(fx.store, path, "capability-host/script-run-requested")).find(
    (e) => e.type === "capability-host/script-run-requested" && e.payload.executionId === settled.payload.executionId,
  )!;
  return Date.parse(settled.createdAt) - Date.parse(requested.createdAt);
}

describe("capability host: typecheck off the host's thread", () => {
  it("settles a 16 kB typecheck bomb within budget + 1 s while another agent's script settles within 1 s and /healthz stays fast", async () => {
    host = await startHostProcess(fx.server.url, { SCRIPT_TYPECHECK_BUDGET_MS: "2000", SCRIPT_TYPECHECK_WORKERS: "2" });
    const readyMs = await host.waitReady();
    await host.waitLog("typecheck worker warm", 2);
    process.stdout.write(`capability host process ready in ${Math.round(readyMs)} ms\n`);

    let probing = true;
    const probes: { at: number; ms: number }[] = [];
    const prober = (async () => {
      while (probing) {
        const t0 = performance.now();
        const ok = await fetch(`http://127.0.0.1:${host!.opsPort}/healthz`).then((r) => r.ok, () => false);
        probes.push({ at: t0, ms: ok ? performance.now() - t0 : Number.POSITIVE_INFINITY });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await waitFor(() => probes.length > 0);
    // The host's own event-loop lag (prom-client resets its maximum at each scrape): read once
    // here to start the window, once at the end, to tell a stalled host from a stalled prober.
    await eventLoopLagMaxMs(host.opsPort);
    const bombRequestedAt = performance.now();
    const wallAtRequest = Date.now();

    const bombPath = uniquePath("bomb");
    const bomb = typeBomb();
    expect(bomb.length).toBeGreaterThanOrEqual(15_900);
    const { executionId: bombId } = await requestScript(fx, bombPath, bomb);
    const otherPath = uniquePath("tenant-b");
    const { executionId: otherId } = await requestScript(fx, otherPath, "return 2;");

    const other = await waitSettled(fx.store, otherPath, otherId, 10_000);
    expect(other.payload.settlement).toEqual({ status: "succeeded", result: 2 });
    expect(await roundTripMs(otherPath, other)).toBeLessThanOrEqual(1_000);

    const bombed = await waitSettled(fx.store, bombPath, bombId, 20_000);
    const bombSettledSeenAt = performance.now();
    expect(bombed.payload.settlement).toEqual({
      status: "failed",
      error: "Script was NOT executed: the checker did not finish within 2000 ms; simplify the types and resend the script.",
      failureKind: "typecheck",
      phase: "typecheck",
      executionMayHaveOccurred: false,
      cancellation: "not-applicable",
    });
    expect(await roundTripMs(bombPath, bombed)).toBeLessThanOrEqual(3_000);
    expect(await eventsOf(fx.store, bombPath, "capability-host/script-run-started")).toHaveLength(0);

    // The terminated checker was replaced: the bomb's agent is served again.
    const next = await requestScript(fx, bombPath, "return 'after the bomb';");
    expect((await waitSettled(fx.store, bombPath, next.executionId, 30_000)).payload.settlement).toEqual({ status: "succeeded", result: "after the bomb" });
    // Terminated once the bomb has used its budget of CPU: at once on a quiet machine, later on a busy one.
    await waitFor(() => host!.logs.some((l) => l.msg === "replaced a typecheck worker" && l.reason === "timed-out"), { timeoutMs: 30_000 });

    probing = false;
    await prober;
    // Probed from before the bomb was requested until after its settlement was seen, every probe fast.
    expect(probes[0]!.at).toBeLessThan(bombRequestedAt);
    expect(probes.at(-1)!.at).toBeGreaterThan(bombSettledSeenAt);
    expect(probes.filter((p) => p.at >= bombRequestedAt && p.at <= bombSettledSeenAt).length).toBeGreaterThanOrEqual(10);
    const hostLagMs = await eventLoopLagMaxMs(host.opsPort);
    const slowest = probes.reduce((a, b) => (b.ms > a.ms ? b : a));
    const replacedAt = host.logs.find((l) => l.msg === "replaced a typecheck worker")?.time;
    const when = (at: number) => `${Math.round(at - bombRequestedAt)} ms`;
    expect(
      slowest.ms,
      `slowest /healthz ${Math.round(slowest.ms)} ms, sent ${when(slowest.at)} after the bomb was requested (its settlement seen at ${when(bombSettledSeenAt)}, ` +
        `the worker replaced at ${replacedAt === undefined ? "?" : `${replacedAt - wallAtRequest} ms`}); the host's own event-loop lag peaked at ${Math.round(hostLagMs)} ms`,
    ).toBeLessThan(100);
    expect(hostLagMs, "the host's event loop stalled").toBeLessThan(100);
  }, 120_000);

  it("is ready and claims work before its checkers are warm; a script waits for a warm checker, not the process", async () => {
    const gate = join(tmpdir(), `checker-gate-${process.pid}-${Date.now()}`);
    process.env.CHECKER_GATE = gate;
    try {
      const inProcess = await CapabilityHost.start({
        nc: fx.nc,
        store: fx.hostStore,
        logger: silentLogger,
        ackWaitMs: 5_000,
        livenessTtlMs: false,
        typecheckWorkerEntry: new URL("./fixtures/gated-checker-worker.mjs", import.meta.url),
      });
      fx.host = inProcess;
      // Started and consuming while no checker can be warm (the gate is still closed).
      await inProcess.consume();
      const path = uniquePath("cold-checker");
      const { executionId } = await requestScript(fx, path, "return 'checked once warm';");
      await waitFor(async () => (await eventsOf(fx.store, path, "capability-host/script-run-requested")).length === 1);
      expect(await eventsOf(fx.store, path, "capability-host/script-run-settled")).toHaveLength(0);
      writeFileSync(gate, "open");
      expect((await waitSettled(fx.store, path, executionId, 30_000)).payload.settlement).toEqual({ status: "succeeded", result: "checked once warm" });
    } finally {
      delete process.env.CHECKER_GATE;
      rmSync(gate, { force: true });
    }
  }, 60_000);
});
