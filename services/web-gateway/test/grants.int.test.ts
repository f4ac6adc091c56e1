// Script authority at the gateway: a key cannot give an agent a grant wider than its own scope
// (create and configure, HTTP and gRPC), and every API-requested script carries the requesting
// key's scope, stamped by the gateway over whatever the client sent: the parts of it inside the
// agent's reach, so that readers of the agent do not learn the key's prefixes elsewhere.
import { credentials, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentRuntimeClient, type AppendEventsResponse } from "@agentrt/gateway-proto";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";
import { enc, http } from "./support/http.ts";

// `operate` too: configuring an agent and requesting scripts are operator actions (ownership table).
const tenantA = testKey([
  { prefix: "/agents/a", verbs: ["read", "append", "operate"] },
  { prefix: "/shared/docs", verbs: ["read"] },
  // Another tenant the key also serves: no stamp on /agents/a may name it.
  { prefix: "/agents/zeta", verbs: ["read", "append"] },
]);
let ts: TestStore;
let gw: TestGateway;
let client: AgentRuntimeClient;

beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, keys: [tenantA], grpc: true });
  client = new AgentRuntimeClient(gw.grpcAddress, credentials.createInsecure());
});
afterAll(async () => {
  client?.close();
  await gw?.close();
  await ts?.close();
});

const scriptRequest = (executionId: string, extra: Record<string, unknown> = {}) => ({
  type: "capability-host/script-run-requested",
  payload: { code: "return 1;", executionId, expiresAt: new Date(Date.now() + 600_000).toISOString(), ...extra },
});

describe("a key cannot grant what it does not hold", () => {
  it("create with a grant wider than the key is 403 naming the prefix and verb, and commits nothing", async () => {
    const path = "/agents/a/wide";
    for (const grant of [[{ prefix: "/agents/b", verbs: ["read"] }], [{ prefix: "/shared/docs", verbs: ["append"] }], [{ prefix: "/", verbs: ["read"] }]]) {
      const res = await http(gw.url, "POST", "/v1/agents", { key: tenantA.apiKey, body: { streamPath: path, grant } });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("forbidden");
      expect(res.body.error.message).toContain(`may not grant ${grant[0]!.verbs[0]} on ${grant[0]!.prefix}`);
      expect(res.body.error.details).toMatchObject({ prefix: grant[0]!.prefix, verb: grant[0]!.verbs[0] });
    }
    expect(await ts.store.lastOffset(path)).toBe(0);
  });

  it("create with a grant inside the key commits it on agent/created", async () => {
    const path = "/agents/a/narrow";
    const grant = [{ prefix: "/shared/docs/handbook", verbs: ["read"] }];
    const res = await http(gw.url, "POST", "/v1/agents", { key: tenantA.apiKey, body: { streamPath: path, grant } });
    expect(res.status).toBe(201);
    const [created] = await ts.store.read(path, { limit: 1 });
    expect(created).toMatchObject({ type: "agent/created", payload: { grant } });
  });

  it("a malformed grant is a 400 naming the field", async () => {
    const res = await http(gw.url, "POST", "/v1/agents", { key: tenantA.apiKey, body: { streamPath: "/agents/a/bad", grant: [{ prefix: "shared", verbs: ["read"] }] } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain("body.grant.0.prefix");
  });

  it("configure (append agent/configured) with a wider grant is 403; within the key it commits", async () => {
    const path = "/agents/a/configured";
    const wide = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, {
      key: tenantA.apiKey,
      body: { events: [{ type: "agent/configured", payload: { config: {}, grant: [{ prefix: "/agents/b", verbs: ["append"] }] } }] },
    });
    expect(wide.status).toBe(403);
    expect(wide.body.error.details).toMatchObject({ field: "events.0.payload.grant", prefix: "/agents/b", verb: "append" });
    expect(await ts.store.lastOffset(path)).toBe(0);
    const inside = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, {
      key: tenantA.apiKey,
      body: { events: [{ type: "agent/configured", payload: { config: {}, grant: [{ prefix: "/agents/a/other", verbs: ["read", "append"] }] } }] },
    });
    expect(inside.status, JSON.stringify(inside.body)).toBe(200);
    expect(inside.body.events[0].payload.grant).toEqual([{ prefix: "/agents/a/other", verbs: ["read", "append"] }]);
  });
});

describe("API-requested scripts carry the requesting key's scope within the agent's reach", () => {
  const stampOn = (path: string, granted: { prefix: string; verbs: string[] }[] = []) => ({
    keyId: tenantA.stored.id,
    scopes: [{ prefix: path, verbs: ["read", "append", "operate"] }, ...granted],
  });

  it("HTTP: the gateway stamps the key's scope on the agent, overwriting a client-supplied requester, and names none of its other prefixes", async () => {
    const path = "/agents/a/scripts";
    const stamp = stampOn(path);
    await ts.store.append(path, [{ type: "agent/created", payload: {} }]);
    const forged = { keyId: "root", scopes: [{ prefix: "/", verbs: ["admin"] }] };
    const res = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, {
      key: tenantA.apiKey,
      body: { events: [scriptRequest("plain"), scriptRequest("forged", { requester: forged })] },
    });
    expect(res.status).toBe(200);
    const stored = await ts.store.read(path, { fromOffset: 2 });
    expect(stored.map((e) => (e.payload as { requester?: unknown }).requester)).toEqual([stamp, stamp]);
    expect(JSON.stringify(stored)).not.toContain("/agents/zeta");
    expect(JSON.stringify(stored)).not.toContain("/shared/docs");
  });

  it("HTTP: a prefix the agent is granted stays in the stamp, as granted by its stream or earlier in the same batch", async () => {
    const path = "/agents/a/granted";
    await ts.store.append(path, [{ type: "agent/created", payload: { grant: [{ prefix: "/shared/docs", verbs: ["read"] }] } }]);
    const first = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { key: tenantA.apiKey, body: { events: [scriptRequest("granted-1")] } });
    expect(first.status).toBe(200);
    // A grant set in the batch before the request is the one the host runs it with: the stamp follows it
    const regrant = { type: "agent/configured", payload: { config: {}, grant: [{ prefix: "/agents/zeta/inbox", verbs: ["append"] }] } };
    const second = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { key: tenantA.apiKey, body: { events: [regrant, scriptRequest("granted-2")] } });
    expect(second.status).toBe(200);

    const stored = await ts.store.read(path, { fromOffset: 2 });
    const stamps = stored.filter((e) => e.type === "capability-host/script-run-requested").map((e) => (e.payload as { requester?: unknown }).requester);
    expect(stamps).toEqual([stampOn(path, [{ prefix: "/shared/docs", verbs: ["read"] }]), stampOn(path, [{ prefix: "/agents/zeta/inbox", verbs: ["read", "append"] }])]);
  });

  it("folds an agent's grant once: a later script request reads only the events after it, however large the stream", async () => {
    // Review: the grant came from the state cache, which keeps no stream over its byte bound, so
    // every script request on a large agent read the whole stream again.
    let eventsRead = 0;
    const counted = new Proxy(ts.store, {
      get(target, property, receiver) {
        if (property === "read") return async (...args: Parameters<typeof target.read>) => {
          const events = await target.read(...args);
          eventsRead += events.length;
          return events;
        };
        const member = Reflect.get(target, property, receiver) as unknown;
        return typeof member === "function" ? (member as (...a: unknown[]) => unknown).bind(target) : member;
      },
    });
    // A state cache of 1 byte: no agent's state is kept
    const small = await startTestGateway({ store: counted, keys: [tenantA], limits: { maxCachedStateBytes: 1 } });
    try {
      const path = "/agents/a/large";
      await ts.store.append(path, [{ type: "agent/created", payload: {} }]);
      for (let i = 0; i < 10; i++) await ts.store.append(path, Array.from({ length: 20 }, (_, j) => ({ type: "agents/context-added", payload: { role: "user", content: `m${i}-${j}` } })));
      const send = (id: string) => http(small.url, "POST", `/v1/streams/${enc(path)}/events`, { key: tenantA.apiKey, body: { events: [scriptRequest(id)] } });
      expect((await send("large-1")).status).toBe(200);
      eventsRead = 0;
      expect((await send("large-2")).status).toBe(200);
      // The second request's grant read only what came after the first fold (its own request)
      expect(eventsRead).toBeLessThan(10);
    } finally {
      await small.close();
    }
  });

  it("gRPC: the same stamp, and the same 403 for a wider grant", async () => {
    const path = "/agents/a/grpc";
    await ts.store.append(path, [{ type: "agent/created", payload: {} }]);
    const md = new Metadata();
    md.set("authorization", `Bearer ${tenantA.apiKey}`);
    const append = (events: { type: string; payload: unknown }[]) =>
      new Promise<AppendEventsResponse>((resolve, reject) =>
        client.appendEvents({ streamPath: path, events: events.map((e) => ({ type: e.type, payloadJson: JSON.stringify(e.payload) })) }, md, (e: ServiceError | null, r) =>
          e ? reject(e) : resolve(r),
        ),
      );
    await append([scriptRequest("g1", { requester: { keyId: "root", scopes: [{ prefix: "/", verbs: ["admin"] }] } })]);
    const [event] = await ts.store.read(path, { fromOffset: 2 });
    expect((event!.payload as { requester?: unknown }).requester).toEqual(stampOn(path));
    await expect(append([{ type: "agent/configured", payload: { config: {}, grant: [{ prefix: "/agents/b", verbs: ["read"] }] } }])).rejects.toMatchObject({
      code: status.PERMISSION_DENIED,
    });
  });
});
