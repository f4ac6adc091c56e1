// One tenant cannot hold every sandbox slot of a host (red-team rt3 F3): its agents, each within
// its own per-agent limit, had taken all four slots with scripts that kept awaiting cheap itx
// calls, and another tenant's `return 1` waited 37 s. The long scripts here run until the test
// releases them, so the other tenant's script must settle while they still hold their slots:
// without the per-tenant limit it never can, and the wait for it times out.

import { Kvm } from "@nats-io/kv";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AGENT_KV_BUCKET, AgentKv } from "../src/itx/agent-storage.ts";
import { eventsOf, type HostFixture, requestScript, startFixture, waitSettled } from "./harness.ts";

let fx: HostFixture;
beforeAll(async () => {
  fx = await startFixture({ host: { concurrency: 4, perAgentConcurrency: 2 } });
});
afterAll(async () => fx?.stop());

it("serves another tenant's trivial script while one tenant's two agents have long scripts for every slot", async () => {
  // Tenants are the paths' first two segments (the default tenant depth).
  const flooding = [`/agents/flood-${process.pid}/a`, `/agents/flood-${process.pid}/b`];
  const other = `/agents/other-${process.pid}/x`;
  // Each long script keeps awaiting cheap itx calls until the test sets its agent's "release" key.
  const long = 'let n = 0;\nwhile ((await itx.kv.get("release")) === null) n++;\nreturn "released";';
  const held: { path: string; executionId: string }[] = [];
  for (const path of flooding) for (let i = 0; i < 2; i++) held.push({ path, executionId: (await requestScript(fx, path, long)).executionId });
  const started = async () => (await Promise.all(flooding.map((p) => eventsOf(fx.store, p, "capability-host/script-run-started")))).flat().length;
  await waitFor(async () => (await started()) >= 3, { timeoutMs: 30_000, what: "the flood's scripts running" });

  const kv = new AgentKv(await new Kvm(fx.nc).open(AGENT_KV_BUCKET));
  try {
    const { executionId } = await requestScript(fx, other, "return 1;");
    const settled = await waitSettled(fx.store, other, executionId, 20_000);
    expect(settled.payload.settlement).toEqual({ status: "succeeded", result: 1 });
    // Served while the flood still held its slots: none of its scripts has settled.
    for (const { path } of held) expect(await eventsOf(fx.store, path, "capability-host/script-run-settled")).toEqual([]);
  } finally {
    for (const path of flooding) await kv.set(path, "release", true);
  }
  for (const { path, executionId: id } of held) {
    expect((await waitSettled(fx.store, path, id, 30_000)).payload.settlement).toEqual({ status: "succeeded", result: "released" });
  }
}, 90_000);
