// Each agent's stream held to a quota at the gateway: an append to a stream at its quota is a
// 403 `quota_exceeded` naming the usage and the quota, and commits nothing. The usage is counted
// from the stream, so the machinery's events count too, and it is shared through the ledger, so
// a second gateway that never read the stream refuses it as well. A tenant (the streams under a
// path prefix) is held to a quota of streams and bytes the same way.

import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { jsonBytes, StreamQuota, type StreamQuotaOptions } from "@agentrt/streams";
import { connectNats, type NatsConnection } from "@agentrt/service-kit";
import { testLogger, userMessage } from "@agentrt/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Authenticator } from "../src/auth/authenticator.ts";
import { gatewayCore } from "../src/core.ts";
import { createHttpGateway, type HttpGateway } from "../src/gateway.ts";
import { enc, http } from "./support/http.ts";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestKey } from "./support/gateway-harness.ts";

/** Room for an agent's birth (13 events) and a few turns. */
const QUOTA_EVENTS = 40;

let ts: TestStore;
const connections: NatsConnection[] = [];
const readStores: JetStreamEventStore[] = [];
const gateways: HttpGateway[] = [];
const quotas: StreamQuota[] = [];

/** A gateway as main.ts makes one: its own read connection, its quota counted through it, the ledger shared. */
async function startGateway(tenantLimits?: StreamQuotaOptions["tenantLimits"], keys?: readonly TestKey[]): Promise<string> {
  const readNc = await connectNats({ url: ts.nats.url, name: "gateway-reads-test" });
  connections.push(readNc);
  const readStore = await JetStreamEventStore.open(readNc);
  readStores.push(readStore);
  const quota = new StreamQuota(readStore, { ledger: readStore.usageLedger, limits: { events: QUOTA_EVENTS }, ...(tenantLimits === undefined ? {} : { tenantLimits }) });
  quotas.push(quota);
  const auth = new Authenticator({ keys: (keys ?? []).map((k) => k.stored), devMode: keys === undefined, defaultRateLimit: { perSecond: 1000, burst: 1000 }, nowMs: Date.now });
  const gateway = createHttpGateway({ store: ts.store, readStore, quota, core: gatewayCore(), auth, log: testLogger("stream-quota-test") });
  gateways.push(gateway);
  return `http://127.0.0.1:${await gateway.listen(0, "127.0.0.1")}`;
}

beforeAll(async () => {
  ts = await openTestStore();
});
afterAll(async () => {
  for (const gateway of gateways) await gateway.close();
  for (const store of readStores) await store.close();
  for (const nc of connections) await nc.drain();
  await ts?.close();
});

const idle = () => Promise.all(quotas.map((quota) => quota.idle()));

it("an agent at its quota is refused with a 403 naming its usage and the quota, counting the machinery's events, on every gateway", async () => {
  const url = await startGateway();
  const path = "/agents/quota/full";
  const created = await http(url, "POST", "/v1/agents", { body: { streamPath: path } });
  expect(created.status).toBe(201);
  const born = await ts.store.lastOffset(path);
  await idle();

  // Given a key's messages, each answered by the machinery with three events of its own
  let accepted = 0;
  let refused: Awaited<ReturnType<typeof http>> | undefined;
  while (refused === undefined && accepted < QUOTA_EVENTS) {
    const res = await http(url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [userMessage(`question ${accepted}`)] } });
    if (res.status !== 200) refused = res;
    else accepted++;
    // The message's count ends before the machinery answers, as it would with a model between.
    await idle();
    await ts.store.append(path, [userMessage("machinery 1"), userMessage("machinery 2"), userMessage("machinery 3")]);
  }

  // Then the append after the stream reached its quota is refused, and nothing of it is stored
  expect(refused?.status).toBe(403);
  expect(refused?.body.error).toMatchObject({ code: "quota_exceeded", details: { streamPath: path, quotaEvents: QUOTA_EVENTS } });
  expect(refused?.body.error.message).toContain(`${path} holds `);
  expect(refused?.body.error.message).toContain("Nothing was appended.");
  const stored = await ts.store.read(path);
  expect(stored.map((event) => event.payload)).not.toContainEqual(expect.objectContaining({ content: `question ${accepted}` }));
  // Each message was judged by the usage counted when the message before it committed: the
  // machinery's events of every turn but the last counted as well. So message k (from 0) was
  // admitted while born + 4k - 3 + 1 fit; the key's messages alone would have fit 27.
  expect(accepted).toBe(Math.floor((QUOTA_EVENTS - born + 2) / 4) + 1);
  expect(accepted).toBeGreaterThan(1);

  // A second gateway, which never read this stream, refuses it from the shared ledger
  const other = await startGateway();
  const again = await http(other, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [userMessage("from elsewhere")] } });
  expect(again.status).toBe(403);
  expect(again.body.error.code).toBe("quota_exceeded");

  // Another agent is not affected
  expect((await http(other, "POST", "/v1/agents", { body: { streamPath: "/agents/quota/other" } })).status).toBe(201);
  const hi = await http(other, "POST", `/v1/streams/${enc("/agents/quota/other")}/events`, { body: { events: [userMessage("hi")] } });
  expect(hi.status).toBe(200);
});

it("a tenant at its count of streams cannot create another agent (403 naming the tenant); its agents still take messages", async () => {
  const url = await startGateway({ streams: 3 });
  for (const name of ["a", "b", "c"]) {
    expect((await http(url, "POST", "/v1/agents", { body: { streamPath: `/agents/tenant-full/${name}` } })).status).toBe(201);
    await idle();
  }

  const fourth = await http(url, "POST", "/v1/agents", { body: { streamPath: "/agents/tenant-full/d" } });
  expect(fourth.status).toBe(403);
  expect(fourth.body.error).toMatchObject({ code: "quota_exceeded", details: { tenant: "/agents/tenant-full", tenantStreams: 3, quotaTenantStreams: 3 } });
  expect(fourth.body.error.message).toMatch(/^Tenant \/agents\/tenant-full \(every stream under it\) holds 3 streams of \d+ bytes; a new stream \/agents\/tenant-full\/d/);
  expect(await ts.store.lastOffset("/agents/tenant-full/d")).toBe(0);
  // Nor by appending to a path with no stream.
  const appended = await http(url, "POST", `/v1/streams/${enc("/agents/tenant-full/e")}/events`, { body: { events: [{ type: "agent/paused", payload: {} }] } });
  expect([appended.status, appended.body.error.code]).toEqual([403, "quota_exceeded"]);

  expect((await http(url, "POST", `/v1/streams/${enc("/agents/tenant-full/a")}/events`, { body: { events: [userMessage("still here")] } })).status).toBe(200);
  expect((await http(url, "POST", "/v1/agents", { body: { streamPath: "/agents/tenant-other/a" } })).status).toBe(201);
});

it("GET …/usage reports what a stream and its tenant hold against their quotas, counting first what was never counted", async () => {
  const url = await startGateway({ streams: 50 });
  const path = "/agents/usage-report/a";
  expect((await http(url, "POST", "/v1/agents", { body: { streamPath: path } })).status).toBe(201);
  // Events appended beside the gateway (the machinery's), never counted by it.
  await ts.store.append(path, [userMessage("machinery 1"), userMessage("machinery 2")]);

  const res = await http(url, "GET", `/v1/agents/${enc(path)}/usage`);
  expect(res.status).toBe(200);
  const events = await ts.store.read(path);
  const bytes = events.reduce((sum, event) => sum + jsonBytes(event), 0);
  expect(res.body).toEqual({
    streamPath: path,
    events: events.length,
    bytes,
    quota: { events: QUOTA_EVENTS, bytes: 1024 * 1024 * 1024 },
    tenant: { prefix: "/agents/usage-report", streams: 1, bytes, quota: { streams: 50, bytes: 16 * 1024 * 1024 * 1024 } },
  });
  // A report of a path with no stream is a 404 and writes nothing: the tenant's streams are as before.
  expect((await http(url, "GET", `/v1/agents/${enc("/agents/usage-report/none")}/usage`)).status).toBe(404);
  expect((await http(url, "GET", `/v1/agents/${enc(path)}/usage`)).body.tenant.streams).toBe(1);
});

it("a tenant quota's refusal tells what the tenant holds only to a key that may read the tenant's prefix", async () => {
  // Given a tenant at its count of streams, and a key scoped to one agent under it
  const narrow = testKey([{ prefix: "/agents/quota-keys/a", verbs: ["read", "append"] }, { prefix: "/agents/quota-keys/b", verbs: ["append"] }]);
  const wide = testKey([{ prefix: "/agents/quota-keys", verbs: ["read", "append"] }]);
  const url = await startGateway({ streams: 1 }, [narrow, wide]);
  expect((await http(url, "POST", "/v1/agents", { body: { streamPath: "/agents/quota-keys/a" }, key: narrow.apiKey })).status).toBe(201);
  await idle();
  // When each creates another agent under the tenant
  const asNarrow = await http(url, "POST", "/v1/agents", { body: { streamPath: "/agents/quota-keys/b" }, key: narrow.apiKey });
  const asWide = await http(url, "POST", "/v1/agents", { body: { streamPath: "/agents/quota-keys/c" }, key: wide.apiKey });
  // Then both are refused; only the key that may read the tenant learns what it holds
  expect(asNarrow.status).toBe(403);
  expect(asNarrow.body.error).toEqual({
    code: "quota_exceeded",
    message:
      "Tenant /agents/quota-keys (every stream under it) is at its quota of 1 streams and 17179869184 bytes; this append to /agents/quota-keys/b would pass it. Nothing was appended. (What the tenant holds is shown only to a key that may read /agents/quota-keys.)",
    details: { streamPath: "/agents/quota-keys/b", tenant: "/agents/quota-keys", quotaTenantStreams: 1, quotaTenantBytes: 17179869184 },
  });
  expect(asWide.status).toBe(403);
  expect(asWide.body.error.details).toMatchObject({ tenant: "/agents/quota-keys", tenantStreams: 1 });
  expect(asWide.body.error.message).toMatch(/^Tenant \/agents\/quota-keys \(every stream under it\) holds 1 streams of \d+ bytes/);
});

it("shows a tenant's usage only to a key that may read the tenant's prefix", async () => {
  const narrow = testKey([{ prefix: "/agents/usage-keys/a", verbs: ["read", "append"] }]);
  const wide = testKey([{ prefix: "/agents/usage-keys", verbs: ["read"] }]);
  const gw = await startTestGateway({ store: ts.store, keys: [narrow, wide] });
  try {
    const path = "/agents/usage-keys/a";
    const created = await http(gw.url, "POST", "/v1/agents", { body: { streamPath: path }, key: narrow.apiKey });
    expect(created.status).toBe(201);
    const asNarrow = await http(gw.url, "GET", `/v1/agents/${enc(path)}/usage`, { key: narrow.apiKey });
    expect(asNarrow.status).toBe(200);
    expect(asNarrow.body).toMatchObject({ streamPath: path, tenant: null });
    const asWide = await http(gw.url, "GET", `/v1/agents/${enc(path)}/usage`, { key: wide.apiKey });
    expect(asWide.body.tenant).toMatchObject({ prefix: "/agents/usage-keys", streams: 1 });
  } finally {
    await gw.close();
  }
});
