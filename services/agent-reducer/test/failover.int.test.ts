// Failover under load with the default lease settings: two reducer replicas as real processes,
// agents taking turns at once, and the replica owning most partitions SIGKILLed while turns are
// in flight. Every turn must be answered, with exactly one request per message and nothing
// settled twice. It prints how long the survivor took to serve the dead replica's partitions
// again (an idle agent's message sent at the kill → its request committed); BENCHMARKS.md
// records the figure under the 1 000 × 5 load (bench/load --kill-reducer).

import { Kvm } from "@nats-io/kv";
import { partitionOfPath } from "@agentrt/streams";
import { DEFAULT_LEASE_TTL_MS } from "@agentrt/service-kit";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PARTITIONS, type System, startSystem, waitForAnswer } from "../../../test/support/system.ts";
import { auditStream, createBareAgent, lastUserContent, say, sumAudits } from "../../../test/support/turns.ts";

const AGENTS = 30;
const TURNS = 4;
let system: System;

beforeAll(async () => {
  system = await startSystem({
    reducers: 2,
    drivers: 1,
    model: { defaultReply: (request) => ({ text: `answer to ${lastUserContent(request.body)}`, tokensPerSecond: 400 }) },
    // The test harness shortens nothing here: the reducer's own default.
    env: { REDUCER_LEASE_TTL_MS: String(DEFAULT_LEASE_TTL_MS) },
  });
});

afterAll(async () => {
  await system?.stop();
});

async function leaseOwners(): Promise<Map<number, string>> {
  const kv = await new Kvm(system.nc).open("agentrt_leases");
  const owners = new Map<number, string>();
  for (let p = 0; p < PARTITIONS; p += 1) {
    const entry = await kv.get(`reducer.partition.${p}`);
    if (entry && entry.operation === "PUT") owners.set(p, (entry.json() as { owner: string }).owner);
  }
  return owners;
}

describe("reducer failover under load (default lease settings)", () => {
  it("a replica killed with turns in flight: every turn answered once, and the survivor serves again at once", async () => {
    await waitFor(async () => new Set((await leaseOwners()).values()).size === 2, { timeoutMs: 30_000, intervalMs: 200 });
    const paths = Array.from({ length: AGENTS }, (_, i) => `/agents/failover/a${i}`);
    const probes = Array.from({ length: 4 * PARTITIONS }, (_, i) => `/agents/failover/probe${i}`);
    for (const path of [...paths, ...probes]) await createBareAgent(system.store, path, 0);

    const triggers: Array<[string, number]> = [];
    let answered = 0;
    let killedAt = 0;
    let victimPartitions: number[] = [];
    const victim = (async () => {
      // Once a third of the turns are answered, kill the replica that owns the most partitions.
      await waitFor(() => answered >= (AGENTS * TURNS) / 3, { timeoutMs: 120_000, intervalMs: 20 });
      const owners = await leaseOwners();
      const counts = new Map<string, number[]>();
      for (const [p, owner] of owners) counts.set(owner, [...(counts.get(owner) ?? []), p]);
      const [victimId, partitions] = [...counts].sort((a, b) => b[1].length - a[1].length)[0]!;
      victimPartitions = partitions;
      await system.processes.all.find((p) => p.name === victimId)!.signal("SIGKILL");
      killedAt = Date.now();
      // An idle agent of a dead replica's partition speaks right at the kill.
      const probe = probes.find((path) => partitions.includes(partitionOfPath(path, PARTITIONS)))!;
      const sent = await say(system.store, probe, `${probe} at the kill`);
      await waitForAnswer(system, probe, `answer to ${probe} at the kill`, 60_000);
      const request = (await system.store.read(probe)).find((e) => e.type === "agent/llm-request-requested" && e.idempotencyKey === `agent/request/${sent.offset}`);
      return { probe, servingAgainMs: request === undefined ? NaN : Date.parse(request.createdAt) - killedAt };
    })();

    await Promise.all(
      paths.map(async (path) => {
        for (let turn = 1; turn <= TURNS; turn += 1) {
          const message = `${path} message ${turn}`;
          const sent = await say(system.store, path, message);
          triggers.push([path, sent.offset]);
          await waitForAnswer(system, path, `answer to ${message}`, 90_000);
          answered += 1;
        }
      }),
    );
    const { servingAgainMs } = await victim;
    const owners = await leaseOwners();

    let missing = 0;
    let duplicated = 0;
    for (const [path, offset] of triggers) {
      const requests = (await system.store.read(path)).filter((e) => e.type === "agent/llm-request-requested" && e.idempotencyKey === `agent/request/${offset}`);
      if (requests.length === 0) missing += 1;
      if (requests.length > 1) duplicated += requests.length - 1;
    }
    const audit = sumAudits(await Promise.all(paths.map(async (p) => auditStream(await system.store.read(p)))));
    const figures = { victimPartitions: victimPartitions.length, servingAgainMs, leaseTtlMs: DEFAULT_LEASE_TTL_MS, triggers: triggers.length, requests: audit.requests, missing, duplicated, lost: audit.lost };
    process.stdout.write(`reducer-failover ${JSON.stringify(figures)}\n`);
    expect(killedAt).toBeGreaterThan(0);
    expect(new Set(owners.values()).size).toBe(1); // the survivor holds every partition
    expect(missing).toBe(0);
    expect(duplicated + audit.duplicated).toBe(0);
    expect(audit.lost).toBe(0);
    expect(audit.violations).toBe(0);
    expect(audit.requests).toBe(AGENTS * TURNS);
  });
});
