// Every route checks the key and its scope: no key → 401, a key scoped elsewhere or to the
// wrong verb → 403, and a rejected append or create commits nothing. Rate limits → 429.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";
import { enc, http } from "./support/http.ts";
import { collectLive, userMessage } from "@agentrt/testing";

const PATH = "/agents/team-a/alpha";
const reader = testKey([{ prefix: "/agents/team-a", verbs: ["read"] }]);
const writer = testKey([{ prefix: "/agents/team-a", verbs: ["read", "append"] }]);
const elsewhere = testKey([{ prefix: "/agents/team-b", verbs: ["admin"] }]);
const limited = testKey([{ prefix: "/agents/team-a", verbs: ["read"] }], { perSecond: 0.001, burst: 2 });

let ts: TestStore;
let gw: TestGateway;
beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, keys: [reader, writer, elsewhere, limited] });
  const seeded = await http(gw.url, "POST", `/v1/streams/${enc(PATH)}/events`, {
    key: writer.apiKey,
    body: { events: [{ type: "agent/created", payload: {} }, userMessage("hello")] },
  });
  expect(seeded.status).toBe(200);
});
afterAll(async () => {
  await gw?.close();
  await ts?.close();
});

/** One valid request per route (and the verb it needs). */
const routes: Array<{ name: string; method: string; path: string; body?: unknown; verb: "read" | "append" }> = [
  { name: "createAgent", method: "POST", path: "/v1/agents", body: { streamPath: "/agents/team-a/new" }, verb: "append" },
  { name: "listAgents", method: "GET", path: "/v1/agents?prefix=/agents", verb: "read" },
  { name: "appendEvents", method: "POST", path: `/v1/streams/${enc(PATH)}/events`, body: { events: [userMessage("x")] }, verb: "append" },
  { name: "readEvents", method: "GET", path: `/v1/streams/${enc(PATH)}/events`, verb: "read" },
  { name: "subscribeSse", method: "GET", path: `/v1/streams/${enc(PATH)}/subscribe`, verb: "read" },
  { name: "getAgentState", method: "GET", path: `/v1/agents/${enc(PATH)}/state`, verb: "read" },
  { name: "getRenderedRequest", method: "GET", path: `/v1/agents/${enc(PATH)}/requests/1`, verb: "read" },
  { name: "auditAgent", method: "GET", path: `/v1/agents/${enc(PATH)}/audit`, verb: "read" },
  { name: "getAgentUsage", method: "GET", path: `/v1/agents/${enc(PATH)}/usage`, verb: "read" },
];

describe("every route checks the key", () => {
  it("covers every authenticated route of the router", () => {
    const authed = gw.gateway.routes.filter((r) => r.public !== true && r.kind !== "websocket").map((r) => r.name);
    expect(routes.map((r) => r.name).sort()).toEqual(authed.sort());
  });

  for (const route of routes) {
    it(`${route.name}: 401 without a key, 401 with a forged key, 403 out of scope`, async () => {
      const before = await ts.store.lastOffset(PATH);
      const none = await http(gw.url, route.method, route.path, { body: route.body });
      expect(none.status).toBe(401);
      expect(none.body.error.code).toBe("unauthenticated");
      const forged = await http(gw.url, route.method, route.path, { body: route.body, key: `${writer.apiKey.slice(0, -3)}AAA` });
      expect(forged.status).toBe(401);
      if (route.name !== "listAgents") {
        const other = await http(gw.url, route.method, route.path, { body: route.body, key: elsewhere.apiKey });
        expect(other.status).toBe(403);
        expect(other.body.error.code).toBe("forbidden");
      }
      if (route.verb === "append") {
        const readOnly = await http(gw.url, route.method, route.path, { body: route.body, key: reader.apiKey });
        expect(readOnly.status).toBe(403);
      }
      expect(await ts.store.lastOffset(PATH)).toBe(before);
      expect(await ts.store.lastOffset("/agents/team-a/new")).toBe(0);
    });
  }

  it("the WebSocket route: 401 without a key, 403 out of scope, accepted with a reader key", async () => {
    const ws = `${gw.url.replace("http", "ws")}/v1/streams/${enc(PATH)}/ws`;
    expect((await collectLive("ws", ws, () => true)).status).toBe(401);
    expect((await collectLive("ws", ws, () => true, { headers: { authorization: `Bearer ${elsewhere.apiKey}` } })).status).toBe(403);
    const ok = await collectLive("ws", ws, (e) => e.length >= 2, { headers: { authorization: `Bearer ${reader.apiKey}` } });
    expect(ok.messages.map((e) => e.data.offset)).toEqual([1, 2]);
  });

  it("a scoped key sees only its streams in the list", async () => {
    const res = await http(gw.url, "GET", "/v1/agents", { key: reader.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.agents.map((a: { streamPath: string }) => a.streamPath)).toEqual([PATH]);
    const other = await http(gw.url, "GET", "/v1/agents", { key: elsewhere.apiKey });
    expect(other.body.agents).toEqual([]);
  });

  it("two different keys in one request are a 400 naming where each came from, and commit nothing; the same key twice is one", async () => {
    const path = `/v1/streams/${enc(PATH)}/events`;
    const before = await ts.store.lastOffset(PATH);
    const both = await http(gw.url, "POST", path, { key: writer.apiKey, headers: { "x-api-key": reader.apiKey }, body: { events: [userMessage("which key?")] } });
    expect(both.status).toBe(400);
    expect(both.body.error.code).toBe("invalid_request");
    expect(both.body.error.message).toBe("Two different API keys were sent, in the Authorization header and in the X-API-Key header; send one.");
    expect(JSON.stringify(both.body)).not.toContain(reader.apiKey);
    expect(await ts.store.lastOffset(PATH)).toBe(before);
    // A stream's query key beside a header key
    const live = await http(gw.url, "GET", `/v1/streams/${enc(PATH)}/subscribe?fromOffset=1&apiKey=${writer.apiKey}`, { headers: { "x-api-key": reader.apiKey } });
    expect(live.status).toBe(400);
    expect(live.body.error.message).toContain("in the X-API-Key header and in the apiKey query parameter");
    // The same key in both headers is one key
    const same = await http(gw.url, "POST", path, { key: writer.apiKey, headers: { "x-api-key": writer.apiKey }, body: { events: [userMessage("one key")] } });
    expect(same.status).toBe(200);
  });

  it("a writer appends; the openapi document needs no key", async () => {
    const ok = await http(gw.url, "POST", `/v1/streams/${enc(PATH)}/events`, { key: writer.apiKey, body: { events: [userMessage("ok")] } });
    expect(ok.status).toBe(200);
    expect((await http(gw.url, "GET", "/v1/openapi.json")).status).toBe(200);
  });

  it("429 once a key's bucket is empty, with Retry-After", async () => {
    const path = `/v1/streams/${enc(PATH)}/events`;
    expect((await http(gw.url, "GET", path, { key: limited.apiKey })).status).toBe(200);
    expect((await http(gw.url, "GET", path, { key: limited.apiKey })).status).toBe(200);
    const third = await http(gw.url, "GET", path, { key: limited.apiKey });
    expect(third.status).toBe(429);
    expect(third.body.error.code).toBe("rate_limited");
    expect(Number(third.headers.get("retry-after"))).toBeGreaterThan(0);
    // Another key is unaffected.
    expect((await http(gw.url, "GET", path, { key: reader.apiKey })).status).toBe(200);
  });
});
