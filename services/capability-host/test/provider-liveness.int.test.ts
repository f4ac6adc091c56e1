// A capability provider killed while it runs a call: the host watches the instance that took the
// call (protocol.ts: the provider answers `{ accepted: instanceId }` first) and fails the call as
// soon as that process is gone, instead of holding the script — and a host slot — for the whole
// call timeout (30 s by default). A provider that is alive but slow keeps its call; a provider of
// an earlier version, which never says which instance took the call, still works, and so does a
// host of an earlier version, which does not ask.

import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { REGISTER_SUBJECT, callSubject } from "@agentrt/capability-sdk";
import { connect } from "@nats-io/transport-node";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HostFixture, requestScript, settlementOf, startFixture, uniquePath, waitSettled } from "./harness.ts";

const PROVIDER = fileURLToPath(new URL("./fixtures/slow-provider.ts", import.meta.url));

let fx: HostFixture;
beforeAll(async () => {
  // The default call timeout: without the liveness probes a killed provider's call takes all of it.
  fx = await startFixture({ host: { providerCallTimeoutMs: 30_000 } });
});
afterAll(async () => {
  await fx?.stop();
});

/** The slow provider as its own process; `lines` collects what it prints. */
async function startSlowProvider(): Promise<{ child: ChildProcess; lines: string[] }> {
  const child = spawn(process.execPath, ["--import", "tsx", PROVIDER], { env: { ...process.env, NATS_URL: fx.server.url }, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => lines.push(...d.toString().split("\n").filter((l) => l.length > 0)));
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`the slow provider exited: ${stderr}`);
      return lines.includes("ready");
    },
    { timeoutMs: 30_000, what: "the slow provider to register" },
  );
  // The host learns the registration through its KV watch.
  await waitFor(() => fx.host!.registry.live().some((p) => p.namespace === "slow"), { timeoutMs: 10_000, what: "the host to see itx.slow" });
  return { child, lines };
}

describe("a provider's liveness during a call", () => {
  it("given a provider killed while it runs a call, the script fails naming the provider within seconds, not after the 30 s call timeout", async () => {
    const { child, lines } = await startSlowProvider();
    try {
      const path = uniquePath("provider-killed");
      // When a script's call reaches the provider, and its process is then killed
      const { executionId } = await requestScript(fx, path, "return await itx.slow.hang();");
      await waitFor(() => lines.includes("called"), { timeoutMs: 20_000, what: "the call to reach the provider" });
      const killedAt = Date.now();
      child.kill("SIGKILL");
      // Then the script settles failed, saying the provider is gone, long before the timeout
      const settled = await waitSettled(fx.store, path, executionId, 25_000);
      const afterKillMs = Date.parse(settled.createdAt) - killedAt;
      expect(settled.payload.settlement).toMatchObject({ status: "failed", failureKind: "runtime" });
      const error = settled.payload.settlement.status === "failed" ? settled.payload.settlement.error : "";
      expect(error).toMatch(/The capability provider for itx\.slow is gone/);
      expect(error).toMatch(/stopped while the call ran/);
      expect(afterKillMs, `settled ${afterKillMs} ms after the kill`).toBeLessThan(10_000);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });

  it("given a provider that is alive but slower than several probe rounds, the call gets its result", async () => {
    const { child } = await startSlowProvider();
    try {
      const path = uniquePath("provider-slow");
      const { executionId } = await requestScript(fx, path, "return await itx.slow.pause({ ms: 3000 });");
      const settled = await waitSettled(fx.store, path, executionId, 25_000);
      expect(settled.payload.settlement).toEqual({ status: "succeeded", result: "done" });
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("given a host of an earlier version (a call without the header), a provider of this version answers with the result alone", async () => {
    const { child } = await startSlowProvider();
    const nc = await connect({ servers: fx.server.url });
    try {
      const call = { method: "pause", args: [{ ms: 10 }], caller: { agentPath: "/agents/test/old-host", executionId: "x:1" } };
      const reply = await nc.request(callSubject("slow"), JSON.stringify(call), { timeout: 10_000 });
      expect(JSON.parse(reply.string())).toEqual({ ok: true, result: "done" });
    } finally {
      await nc.close();
      child.kill("SIGKILL");
    }
  });

  it("given a provider of an earlier version (no 'accepted' answer, no liveness subject), its calls still work", async () => {
    // A provider written against the earlier protocol: one answer per call, the result.
    const nc = await connect({ servers: fx.server.url });
    try {
      nc.subscribe(callSubject("legacy"), { queue: "provider.legacy", callback: (_e, msg) => void msg.respond(JSON.stringify({ ok: true, result: 41 })) });
      const registration = { namespace: "legacy", instanceId: "legacy-1", methods: ["answer"], declarations: "interface Itx { legacy: { answer(): Promise<number> } }", ttlMs: 60_000 };
      expect(JSON.parse((await nc.request(REGISTER_SUBJECT, JSON.stringify(registration), { timeout: 5_000 })).string())).toEqual({ ok: true });
      await waitFor(() => fx.host!.registry.live().some((p) => p.namespace === "legacy"), { timeoutMs: 10_000, what: "the host to see itx.legacy" });
      const path = uniquePath("provider-legacy");
      expect(await settlementOf(fx, path, "return (await itx.legacy.answer()) + 1;")).toEqual({ status: "succeeded", result: 42 });
    } finally {
      await nc.close();
    }
  });
});
