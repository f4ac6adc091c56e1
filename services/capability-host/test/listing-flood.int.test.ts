// A script listing its files and keys in a loop cannot stall other tenants (red-team rt3 F1).
// A files listing read the index keys and then made one get per file, and a KV listing streamed
// every key through its own consumer; one agent listing its 10 000 files eight at a time took
// another tenant's two-call kv script from 70 ms to 17 s. Now a listing reads its entries in one
// pass and each tenant's listings draw on a budget of entries (listing-budget.ts). Measured in
// one run: the other tenant's script alone, then beside the flood; no wall-time bound.

import { Kvm } from "@nats-io/kv";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AGENT_FILES_INDEX_BUCKET, AGENT_KV_BUCKET, AgentKv, indexFile, ITX_LIST_MAX_ENTRIES } from "../src/itx/agent-storage.ts";
import { eventsOf, type HostFixture, requestScript, startFixture, waitSettled } from "./harness.ts";

let fx: HostFixture;
beforeAll(async () => {
  fx = await startFixture({ host: { concurrency: 4, perAgentConcurrency: 2 } });
});
afterAll(async () => fx?.stop());

async function inBatches<T>(items: T[], each: (item: T) => Promise<unknown>, size = 500): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(each));
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** How long the other tenant's kv script takes from its request to its settlement, by the events' times (no polling in it). */
async function otherTenantScriptMs(path: string): Promise<number> {
  const { executionId } = await requestScript(fx, path, 'await itx.kv.set("v", 1);\nreturn await itx.kv.get("v");');
  const settled = await waitSettled(fx.store, path, executionId, 60_000);
  expect(settled.payload.settlement).toEqual({ status: "succeeded", result: 1 });
  const requested = (await eventsOf(fx.store, path, "capability-host/script-run-requested")).find((e) => (e.payload as { executionId: string }).executionId === executionId)!;
  return Date.parse(settled.createdAt) - Date.parse(requested.createdAt);
}

it("a tenant listing 10 000 files and 9 000 keys in a loop barely slows another tenant's kv script", async () => {
  const lister = `/agents/lister-${process.pid}/a`;
  const other = `/agents/other-${process.pid}/x`;
  const kvm = new Kvm(fx.nc);
  // Given an agent with as many files as a listing answers with, and 9 000 keys (room left in its quota of keys)
  const index = await kvm.open(AGENT_FILES_INDEX_BUCKET);
  const keys = await kvm.open(AGENT_KV_BUCKET);
  await inBatches(Array.from({ length: ITX_LIST_MAX_ENTRIES }, (_, i) => i), (i) => indexFile(index, lister, `d/${i}`, { size: 1, revision: 1 }));
  await inBatches(Array.from({ length: 9_000 }, (_, i) => i), (i) => keys.put(`${lister.slice(1)}.d${i}`, "1"));

  // The other tenant's script alone (its first runs warm the path up)
  for (let i = 0; i < 3; i++) await otherTenantScriptMs(other);
  const alone: number[] = [];
  for (let i = 0; i < 15; i++) alone.push(await otherTenantScriptMs(other));

  // When the lister's two scripts list eight at a time in a loop, counting their rounds, until released
  const flood = [
    "let rounds = 0;",
    'while ((await itx.kv.get("release")) === null) {',
    '  const lists = await Promise.all([...Array.from({ length: 4 }, () => itx.files.list("")), ...Array.from({ length: 4 }, () => itx.kv.list(""))]);',
    "  if (lists.some((l) => l.length < 9000)) throw new Error(`a listing came back short: ${lists.map((l) => l.length)}`);",
    '  await itx.kv.set("rounds", ++rounds);',
    "}",
    "return rounds;",
  ].join("\n");
  const flooding = [(await requestScript(fx, lister, flood)).executionId, (await requestScript(fx, lister, flood)).executionId];
  const kv = new AgentKv(keys);
  const during: number[] = [];
  try {
    await waitFor(async () => ((await kv.get(lister, "rounds")) as number | null) !== null, { timeoutMs: 30_000, what: "the lister's first round" });
    for (let i = 0; i < 15; i++) during.push(await otherTenantScriptMs(other));
  } finally {
    await kv.set(lister, "release", true);
  }
  // Then the other tenant's script takes at most a few times as long as it did alone
  const ratio = median(during) / median(alone);
  expect(ratio, `alone ${alone.join(", ")} ms; beside the flood ${during.join(", ")} ms`).toBeLessThan(3);
  // And the lister did list all along (each round is 76 000 entries)
  const rounds = await Promise.all(flooding.map(async (id) => (await waitSettled(fx.store, lister, id, 60_000)).payload.settlement));
  for (const settlement of rounds) expect(settlement).toMatchObject({ status: "succeeded" });
  expect(rounds.map((s) => (s as { result: number }).result).reduce((a, b) => a + b, 0)).toBeGreaterThan(1);
}, 180_000);
