// A script's appends are held to its agent's stream quota: a loop of `itx.agent.append` is refused
// once the stream holds its quota (the error names the usage and the quota), the next script's
// first append is refused at once, and the host's own settlements still commit past the quota,
// so the agent never wedges. A script creating sub-agents (its tenant's streams) is refused at the
// tenant's quota of streams.

import type { AgentEvent } from "@agentrt/contract";
import { StreamQuota } from "@agentrt/streams";
import type { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CapabilityHost, WorkerChecker } from "../src/index.ts";
import { type HostFixture, requestScript, silentLogger, startFixture, uniquePath, waitSettled } from "./harness.ts";

const QUOTA_EVENTS = 30;
const TENANT_STREAMS = 5;
/** Appends a summary until refused; gives how many went through and the refusal. */
const FILL = `let appended = 0;
try {
  while (appended < 200) {
    await itx.agent.append({ type: "agent/summary-updated", payload: { title: "t" + appended, activity: "filling" } });
    appended++;
  }
} catch (error) {
  return { appended, refusal: (error as Error).message };
}
return { appended };`;

let fx: HostFixture;
beforeAll(async () => {
  fx = await startFixture({ startHost: false });
  const hostStore = fx.hostStore as JetStreamEventStore;
  const streamQuota = new StreamQuota(hostStore, { ledger: hostStore.usageLedger, limits: { events: QUOTA_EVENTS }, tenantLimits: { streams: TENANT_STREAMS } });
  fx.host = await CapabilityHost.start({ nc: fx.nc, store: fx.hostStore, logger: silentLogger, ackWaitMs: 5_000, streamQuota });
  if (fx.host.checker instanceof WorkerChecker) await fx.host.checker.whenWarm();
  await fx.host.consume();
});
afterAll(async () => fx?.stop());

type Filled = { appended: number; refusal?: string };
const isSummary = (event: AgentEvent) => event.type === "agent/summary-updated";

it("a script filling its agent's stream is refused at the quota, the next script at once, and both still settle", async () => {
  const path = uniquePath("fill");
  const first = await requestScript(fx, path, FILL);
  const filled = await waitSettled(fx.store, path, first.executionId, 30_000);
  expect(filled.payload.settlement.status).toBe("succeeded");
  const result = (filled.payload.settlement as { result: Filled }).result;
  expect(result.appended).toBeLessThan(200);
  expect(result.refusal).toMatch(new RegExp(`^${path} holds \\d+ events of \\d+ bytes; 1 more of \\d+ bytes would pass its quota of ${QUOTA_EVENTS} events`));
  // The stream stopped at its quota, give or take what was appended before its first count
  // ended; the settlement committed past it.
  const events = await fx.store.read(path);
  const beforeSettled = events.filter((event) => event.offset < filled.offset);
  expect(beforeSettled.length).toBeGreaterThanOrEqual(QUOTA_EVENTS);
  expect(beforeSettled.length).toBeLessThanOrEqual(QUOTA_EVENTS + 5);
  expect(events.filter(isSummary)).toHaveLength(result.appended);

  const second = await requestScript(fx, path, FILL);
  const refusedAtOnce = await waitSettled(fx.store, path, second.executionId, 30_000);
  expect(refusedAtOnce.payload.settlement).toMatchObject({ status: "succeeded", result: { appended: 0, refusal: expect.stringContaining("Nothing was appended.") } });
  expect((await fx.store.read(path)).filter(isSummary)).toHaveLength(result.appended);

  // Another agent's scripts append as before.
  const other = uniquePath("other");
  const fine = await requestScript(fx, other, 'await itx.agent.append({ type: "agent/summary-updated", payload: { title: "ok", activity: "fine" } }); return "ok";');
  expect((await waitSettled(fx.store, other, fine.executionId, 30_000)).payload.settlement).toEqual({ status: "succeeded", result: "ok" });
});

it("a script creating sub-agents is refused once its tenant holds its quota of streams", async () => {
  // Its own tenant (the first two segments), so the other tests' streams do not count.
  const path = `/tenants-${process.pid}/a`;
  const spawn = `let created = 0;
try {
  while (created < 50) {
    await itx.agents.get("sub-" + created).create();
    created++;
  }
} catch (error) {
  return { created, refusal: (error as Error).message };
}
return { created };`;
  const { executionId } = await requestScript(fx, path, spawn);
  const settled = await waitSettled(fx.store, path, executionId, 30_000);
  expect(settled.payload.settlement.status).toBe("succeeded");
  const result = (settled.payload.settlement as { result: { created: number; refusal?: string } }).result;
  expect(result.refusal).toMatch(new RegExp(`^Tenant /tenants-${process.pid}/a \\(every stream under it\\) holds \\d+ streams of \\d+ bytes; a new stream /tenants-${process.pid}/a/sub-${result.created} `));
  // The agent's own stream was appended to by the test, beside the quota: not counted. Each
  // creation is judged by the count of the ones before it, which runs after each commits.
  expect(result.created).toBeGreaterThanOrEqual(TENANT_STREAMS);
  expect(result.created).toBeLessThanOrEqual(TENANT_STREAMS + 3);
  expect(await fx.store.lastOffset(`${path}/sub-${result.created}`)).toBe(0);
});
