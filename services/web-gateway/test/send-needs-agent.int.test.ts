// A message or a script request to a path with no agent is refused by the gateway (404 "no agent at PATH; create
// it with `agents create PATH`") and writes nothing, so `create` still works afterwards; a
// batch that brings its own birth, and writers other than user input, are not held.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, type TestGateway } from "./support/gateway-harness.ts";
import { userMessage } from "@agentrt/testing";
import { enc, http } from "./support/http.ts";

let ts: TestStore;
let gw: TestGateway;

beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, devMode: true });
});
afterAll(async () => {
  await gw?.close();
  await ts?.close();
});

const append = (path: string, events: unknown[]) => http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events } });

describe("user input needs an agent", () => {
  it("404 for a message to a path with no agent, nothing written; then create and send work", async () => {
    const path = "/agents/web/typo";
    const refused = await append(path, [userMessage("hello?")]);
    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe("not_found");
    expect(refused.body.error.message).toBe(`no agent at ${path}; create it with \`agents create ${path}\``);
    expect(await ts.store.lastOffset(path)).toBe(0);
    expect((await ts.store.listStreams("/agents/web/typo")).map((s) => s.streamPath)).not.toContain(path);

    const created = await http(gw.url, "POST", "/v1/agents", { body: { streamPath: path } });
    expect(created.status).toBe(201);
    const sent = await append(path, [userMessage("hello")]);
    expect(sent.status).toBe(200);
    expect(sent.body.events[0].offset).toBe(created.body.events.length + 1);
  });

  it("a batch that brings its birth first is accepted; one whose message comes before the birth is not", async () => {
    const early = "/agents/web/early";
    const refused = await append(early, [userMessage("first"), { type: "agent/created", payload: {} }]);
    expect(refused.status).toBe(404);
    expect(refused.body.error.details).toMatchObject({ streamPath: early, index: 0 });
    expect(await ts.store.lastOffset(early)).toBe(0);
    const ok = await append(early, [{ type: "agent/created", payload: {} }, userMessage("first")]);
    expect(ok.status).toBe(200);
  });

  it("a malformed batch still gets its 400 naming the field, not a 404", async () => {
    const res = await append("/agents/web/nobody", [userMessage("ok"), { type: "agents/context-added", payload: { role: "user" } }]);
    expect(res.status).toBe(400);
    expect(res.body.error.details.issues[0].path).toBe("events[1].payload.content");
  });

  it("events that are not user input are not held (a stream of some other writer)", async () => {
    const path = "/agents/web/not-user-input";
    const res = await append(path, [{ type: "agents/context-added", payload: { role: "developer", content: "a note" } }]);
    expect(res.status).toBe(200);
    // and user input on that birthless stream is still refused
    expect((await append(path, [userMessage("hi")])).status).toBe(404);
  });

  it("404 for a script request to a path with no agent, nothing written; once created it is accepted", async () => {
    const path = "/agents/web/no-agent-script";
    const script = { type: "capability-host/script-run-requested", payload: { code: "return 1;", executionId: "ops-1", expiresAt: new Date(Date.now() + 60_000).toISOString() } };
    const refused = await append(path, [script]);
    expect(refused.status).toBe(404);
    expect(refused.body.error.message).toBe(`no agent at ${path}; create it with \`agents create ${path}\``);
    expect(refused.body.error.details).toMatchObject({ streamPath: path, index: 0 });
    expect(await ts.store.lastOffset(path)).toBe(0);
    expect((await http(gw.url, "POST", "/v1/agents", { body: { streamPath: path } })).status).toBe(201);
    expect((await append(path, [script])).status).toBe(200);
  });
});
