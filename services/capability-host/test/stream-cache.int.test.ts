// The host's stream cache (issue 16, the long chaos soak): a script reads only what its stream
// gained since the host last served that agent, not the whole stream — a whole read past 8 records
// creates a JetStream consumer, which a cluster creates through its meta leader, the part a node's
// death sends into an election. The stream stays the truth: what the cache has not seen yet is
// decided on before `started` is appended.

import type { AgentEvent } from "@agentrt/contract";
import type { ReadOptions } from "@agentrt/streams";
import { afterEach, describe, expect, it } from "vitest";
import { CapabilityHost, WorkerChecker } from "../src/index.ts";
import { settledKey, typecheckFailed } from "../src/settlements.ts";
import { type HostFixture, requestScript, silentLogger, startFixture, uniquePath, waitSettled } from "./harness.ts";

let fx: HostFixture | undefined;
afterEach(async () => {
  await fx?.stop();
  fx = undefined;
});

/** Starts a host whose store counts the reads of a whole stream (from offset 1), per stream. */
async function hostCountingWholeReads(cache: boolean): Promise<{ fixture: HostFixture; wholeReads: Map<string, number> }> {
  const fixture = await startFixture({ startHost: false });
  const wholeReads = new Map<string, number>();
  const store = fixture.hostStore as unknown as { read(path: string, options?: ReadOptions): Promise<AgentEvent[]> };
  const read = store.read.bind(store);
  store.read = (path, options) => {
    if ((options?.fromOffset ?? 1) === 1) wholeReads.set(path, (wholeReads.get(path) ?? 0) + 1);
    return read(path, options);
  };
  fixture.host = await CapabilityHost.start({
    nc: fixture.nc,
    store: fixture.hostStore,
    logger: silentLogger,
    ackWaitMs: 5_000,
    ...(cache ? { streamCache: { afterSequence: 0 } } : {}),
  });
  if (fixture.host.checker instanceof WorkerChecker) await fixture.host.checker.whenWarm();
  await fixture.host.consume();
  return { fixture, wholeReads };
}

/** A stream of `records` stored records: more than a read serves by direct gets alone. */
async function longStream(fixture: HostFixture, path: string, records: number): Promise<void> {
  await fixture.store.append(path, [{ type: "agent/created", payload: {}, idempotencyKey: "agent/created" }]);
  for (let i = 0; i < records; i++) {
    await fixture.store.append(path, [{ type: "agents/context-added", payload: { role: "user", content: `note ${i}`, actor: { type: "user", origin: "web" } } }]);
  }
}

describe("the capability host's stream cache", () => {
  it("given a host with the cache, when one agent asks for three scripts in turn, then only the first reads the whole stream and each sees the one before", async () => {
    const { fixture, wholeReads } = await hostCountingWholeReads(true);
    fx = fixture;
    const path = uniquePath("cached");
    await longStream(fixture, path, 20);
    for (const n of [1, 2, 3]) {
      const { executionId } = await requestScript(fixture, path, `return ${n};`);
      const settled = await waitSettled(fixture.store, path, executionId);
      expect(settled.payload.settlement).toEqual({ status: "succeeded", result: n });
    }
    expect(wholeReads.get(path)).toBe(1);
    // Each script ran once: started once and settled once, in order, nothing else appended by the host.
    const events = await fixture.store.read(path);
    const lifecycle = events.filter((e) => e.type.startsWith("capability-host/script-run-")).map((e) => e.type.slice("capability-host/script-run-".length));
    expect(lifecycle).toEqual(["requested", "started", "settled", "requested", "started", "settled", "requested", "started", "settled"]);
  }, 60_000);

  it("given a host without the cache, when the same three scripts run, then each reads the whole stream (what the cache saves)", async () => {
    const { fixture, wholeReads } = await hostCountingWholeReads(false);
    fx = fixture;
    const path = uniquePath("uncached");
    await longStream(fixture, path, 20);
    for (const n of [1, 2, 3]) {
      const { executionId } = await requestScript(fixture, path, `return ${n};`);
      expect((await waitSettled(fixture.store, path, executionId)).payload.settlement).toEqual({ status: "succeeded", result: n });
    }
    expect(wholeReads.get(path)).toBe(3);
  }, 60_000);

  it("given a cached stream, when another host settles a script, then its late item finds it settled and does not run it", async () => {
    const { fixture, wholeReads } = await hostCountingWholeReads(true);
    fx = fixture;
    const path = uniquePath("settled-elsewhere");
    await longStream(fixture, path, 10);
    const first = await requestScript(fixture, path, "return 1;");
    await waitSettled(fixture.store, path, first.executionId);
    // Another host took the next script and settled it; this host gets its item late (a redelivery).
    const executionId = "elsewhere:1";
    const expiresAt = new Date(Date.now() + 120_000).toISOString();
    const requested = await fixture.store.append(path, [{ type: "capability-host/script-run-requested", payload: { code: "return 2;", executionId, expiresAt } }]);
    await fixture.store.append(path, [
      { type: "capability-host/script-run-settled", payload: { executionId, settlement: typecheckFailed(["checked elsewhere"]) }, idempotencyKey: settledKey(executionId) },
    ]);
    expect(await fixture.host!.runner.handle(path, executionId, requested.events[0]!.offset)).toBe("already-settled");
    const events = await fixture.store.read(path);
    expect(events.filter((e) => e.type === "capability-host/script-run-started" && e.payload.executionId === executionId)).toHaveLength(0);
    // Decided from the cache whether or not the feed had brought the settlement yet (if not, the
    // conditional started append met it and the host read only what it lacked): no whole read.
    expect(wholeReads.get(path)).toBe(1);
  }, 60_000);
});
