// Orphaning only on proof of death (issue #12 item 3), with two host processes: the host
// running a script is stalled (SIGSTOP) for less than its liveness lease's TTL; its work item
// is redelivered to the other host, which sees the script started by a host whose lease is
// current and leaves it alone (the frozen host keeps its presence subscription: not dead); after
// SIGCONT the script settles with its real result. A host that is killed instead is gone at once
// (its presence subject has no responders): the other host hands its work item back and settles
// its script `orphaned` long before the item's ack wait or the lease.

import { waitFor } from "@agentrt/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Kvm } from "@nats-io/kv";
import { AGENT_KV_BUCKET, DEFAULT_HOST_LIVENESS_TTL_MS } from "../src/index.ts";
import { HOST_LIVENESS_BUCKET } from "../src/host-liveness.ts";
import { startHostProcess, type HostProcess } from "./host-process.ts";
import { eventsOf, type HostFixture, requestScript, startFixture, uniquePath, waitSettled } from "./harness.ts";

let fx: HostFixture;
const hosts: HostProcess[] = [];
beforeAll(async () => {
  fx = await startFixture({ startHost: false });
});
async function killHosts(): Promise<void> {
  for (const host of hosts.splice(0)) {
    if (host.child.signalCode === null && host.child.exitCode === null) host.child.kill("SIGCONT");
    await host.kill();
  }
}
// Each test's hosts are gone before the next test: a leftover host would claim its scripts.
afterEach(killHosts);
afterAll(async () => {
  await killHosts();
  await fx?.stop();
});

const TTL_MS = 8_000;
const env = { HOST_LIVENESS_TTL_MS: String(TTL_MS), SCRIPT_WORK_ACK_WAIT_MS: "1000", SCRIPT_CONCURRENCY: "2" };
// Makes its side effect, then runs until the test releases it (its agent's KV key "release").
const LONG = 'await itx.chat.sendMessage("running");\nwhile ((await itx.kv.get("release")) === null) {}\nreturn "real result";';

async function release(path: string): Promise<void> {
  const kv = await new Kvm(fx.nc).open(AGENT_KV_BUCKET);
  await kv.put(`${path.slice(1)}.release`, JSON.stringify(true));
}

/** The host that will run the script, ready with a warm checker. */
async function startRunner(): Promise<HostProcess> {
  const first = await startHostProcess(fx.server.url, env);
  hosts.push(first);
  await first.waitReady();
  await first.waitLog("typecheck worker warm");
  return first;
}

describe("capability host: orphaning only on proof of death", () => {
  it("a host stalled (SIGSTOP) for less than its lease keeps its script, which settles with its real result", async () => {
    const runner = await startRunner();
    const path = uniquePath("stalled");
    const { executionId } = await requestScript(fx, path, LONG);
    await waitFor(async () => (await eventsOf(fx.store, path, "agents/web-message-sent")).length === 1, { timeoutMs: 30_000, what: "the script running" });
    // Only now the second replica: the script is certainly the first host's.
    const other = await startHostProcess(fx.server.url, env);
    hosts.push(other);
    await other.waitReady();

    runner.child.kill("SIGSTOP");
    try {
      // The stalled host stops heartbeating: its item is redelivered to the other host, which
      // finds the script started by a host whose lease is current and leaves it.
      await other.waitLog("script is running on a host whose liveness lease is current; leaving it to that host", 1, TTL_MS - 3_000);
    } finally {
      runner.child.kill("SIGCONT");
    }
    await release(path);
    const settled = await waitSettled(fx.store, path, executionId, 30_000);
    expect(settled.payload.settlement).toEqual({ status: "succeeded", result: "real result" });
    expect(await eventsOf(fx.store, path, "capability-host/script-run-settled")).toHaveLength(1);
    expect(await eventsOf(fx.store, path, "capability-host/script-run-started")).toHaveLength(1);
    expect(other.logs.some((l) => l.msg === "script settled" && l.outcome === "orphaned")).toBe(false);
  }, 120_000);

  it("a host stalled (SIGSTOP) past its lease: the other host settles its script orphaned, and the woken host's script takes no further effect", async () => {
    // A short lease, so the stall outlasts it; the script's next side effect comes after the release.
    const SHORT_TTL_MS = 2_000;
    const shortLease = { ...env, HOST_LIVENESS_TTL_MS: String(SHORT_TTL_MS) };
    const runner = await startHostProcess(fx.server.url, shortLease);
    hosts.push(runner);
    await runner.waitReady();
    await runner.waitLog("typecheck worker warm");
    const path = uniquePath("stalled-past-lease");
    const code = 'await itx.chat.sendMessage("running");\nwhile ((await itx.kv.get("release")) === null) {}\nawait itx.chat.sendMessage("after the release");\nreturn "real result";';
    const { executionId } = await requestScript(fx, path, code);
    await waitFor(async () => (await eventsOf(fx.store, path, "agents/web-message-sent")).length === 1, { timeoutMs: 30_000, what: "the script running" });
    const other = await startHostProcess(fx.server.url, shortLease);
    hosts.push(other);
    await other.waitReady();

    runner.child.kill("SIGSTOP");
    let settled;
    try {
      // Its lease lapses; the other host gets the item again and finds the runner gone.
      settled = await waitSettled(fx.store, path, executionId, 30_000);
    } finally {
      runner.child.kill("SIGCONT");
    }
    expect(settled.payload.settlement).toMatchObject({ status: "failed", failureKind: "orphaned" });
    // Woken, the stalled host learns its lease lapsed before the script's next call takes effect.
    await runner.waitLog("this host may have been found dead: the scripts it runs are fenced (no further itx calls; none starts its body)", 1, 15_000);
    await release(path);
    // Its own settlement (the script threw at the refused call) finds the orphaned one first.
    await waitFor(() => runner.logs.some((l) => l.msg === "another incarnation settled first (lost race); standing down"), { timeoutMs: 30_000, what: "the woken host to end its script" });
    const messages = await eventsOf(fx.store, path, "agents/web-message-sent");
    expect(messages).toHaveLength(1);
    expect(JSON.stringify(messages)).not.toContain("after the release");
    expect(await eventsOf(fx.store, path, "capability-host/script-run-settled")).toHaveLength(1);
  }, 120_000);

  it("a host killed mid-script is found gone by presence, and the other host settles the script orphaned without re-running it, before the ack wait or the lease", async () => {
    // An ack wait longer than the lease: neither the item's redelivery nor the lease's expiry can explain a quick orphaning.
    const ACK_WAIT_MS = 12_000;
    const slowBackstops = { ...env, SCRIPT_WORK_ACK_WAIT_MS: String(ACK_WAIT_MS) };
    const runner = await startHostProcess(fx.server.url, slowBackstops);
    hosts.push(runner);
    await runner.waitReady();
    await runner.waitLog("typecheck worker warm");
    const path = uniquePath("killed");
    const { executionId } = await requestScript(fx, path, LONG);
    await waitFor(async () => (await eventsOf(fx.store, path, "agents/web-message-sent")).length === 1, { timeoutMs: 30_000, what: "the script running" });
    const other = await startHostProcess(fx.server.url, slowBackstops);
    hosts.push(other);
    await other.waitReady();

    await runner.kill("SIGKILL");
    const killedAt = Date.now();
    const settled = await waitSettled(fx.store, path, executionId, 30_000);
    expect(settled.payload.settlement).toMatchObject({ status: "failed", failureKind: "orphaned", phase: "recovery", executionMayHaveOccurred: true });
    // Before the lease could have lapsed (refreshed every third of it) and before the item's ack
    // wait: the dead host's closed connection was the proof of death.
    const afterKillMs = Date.parse(settled.createdAt) - killedAt;
    process.stdout.write(`orphaned ${afterKillMs} ms after the kill (lease TTL ${TTL_MS} ms, ack wait ${ACK_WAIT_MS} ms)\n`);
    expect(afterKillMs).toBeLessThan(TTL_MS - Math.floor(TTL_MS / 3));
    expect(other.logs.some((l) => l.msg === "the claimant of a work item is gone; handed the item back to the queue")).toBe(true);
    expect(await eventsOf(fx.store, path, "agents/web-message-sent")).toHaveLength(1);
  }, 120_000);

  it("with the default settings a killed host's scripts recover within seconds: the running one orphaned, the one it held run elsewhere", async () => {
    // Only the per-agent limit is set (so a second script of the agent waits on the same host),
    // and a typecheck budget a loaded machine cannot exceed; the ack wait and the lease are the
    // defaults a user runs with.
    const defaults = { SCRIPT_CONCURRENCY_PER_AGENT: "1", SCRIPT_TYPECHECK_BUDGET_MS: "20000" };
    const runner = await startHostProcess(fx.server.url, defaults);
    hosts.push(runner);
    await runner.waitReady();
    await runner.waitLog("typecheck worker warm");
    const path = uniquePath("defaults");
    const { executionId } = await requestScript(fx, path, LONG);
    await waitFor(
      async () => {
        // A script that settled instead of running would never send its message: say how it settled.
        const settled = await eventsOf(fx.store, path, "capability-host/script-run-settled");
        if (settled.length > 0) throw new Error(`the long script settled instead of running: ${JSON.stringify(settled[0]?.payload)}`);
        return (await eventsOf(fx.store, path, "agents/web-message-sent")).length === 1;
      },
      { timeoutMs: 60_000, what: "the script running", failFast: () => true },
    );
    const next = await requestScript(fx, path, 'return "next";');
    const other = await startHostProcess(fx.server.url, defaults);
    hosts.push(other);
    await other.waitReady();
    await other.waitLog("typecheck worker warm");
    // The earlier tests made the leases bucket with their 8 s TTL: a host follows its own setting.
    expect((await (await new Kvm(fx.nc).open(HOST_LIVENESS_BUCKET)).status()).ttl).toBe(DEFAULT_HOST_LIVENESS_TTL_MS);
    // The next script is still the runner's (held behind the agent's limit), not run by the other host.
    expect(await eventsOf(fx.store, path, "capability-host/script-run-settled")).toHaveLength(0);

    await runner.kill("SIGKILL");
    const killedAt = Date.now();
    const orphaned = await waitSettled(fx.store, path, executionId, 30_000);
    const ran = await waitSettled(fx.store, path, next.executionId, 30_000);
    expect(orphaned.payload.settlement).toMatchObject({ status: "failed", failureKind: "orphaned" });
    expect(ran.payload.settlement).toEqual({ status: "succeeded", result: "next" });
    const orphanedMs = Date.parse(orphaned.createdAt) - killedAt;
    const nextMs = Date.parse(ran.createdAt) - killedAt;
    process.stdout.write(`killed host (defaults): running script orphaned after ${orphanedMs} ms, the next script settled after ${nextMs} ms\n`);
    // Within seconds (0.5–1 s at load 40–64; 2.8 s at load 68: the margin is for a loaded machine).
    // Presence alone is proven by the test above, where the ack wait and the lease are far longer.
    expect(orphanedMs).toBeLessThan(8_000);
    expect(nextMs).toBeLessThan(8_000);
    expect(await eventsOf(fx.store, path, "agents/web-message-sent")).toHaveLength(1);
  }, 120_000);
});
