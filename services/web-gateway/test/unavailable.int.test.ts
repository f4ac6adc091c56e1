// When NATS is gone the gateway answers 503 `unavailable` (retryable), not 500, and recovers
// by itself once NATS is back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "@agentrt/testing";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, type TestGateway } from "./support/gateway-harness.ts";
import { enc, http, userMessage } from "./support/http.ts";

let ts: TestStore;
let gw: TestGateway;
beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, devMode: true });
});
afterAll(async () => {
  await gw?.close();
  await ts?.close().catch(() => undefined);
});

describe("NATS outage", () => {
  it("503 while NATS is down, then serves again", { timeout: 90_000 }, async () => {
    const path = "/agents/outage/a";
    expect((await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [userMessage("before")] } })).status).toBe(200);
    await ts.nats.kill("SIGKILL");
    const down = await http(gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [userMessage("during")] } });
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe("unavailable");
    await ts.nats.restart();
    await waitFor(async () => (await http(gw.url, "GET", `/v1/streams/${enc(path)}/events`)).status === 200, { timeoutMs: 60_000, intervalMs: 250, what: "reads after NATS is back" });
    const read = await http(gw.url, "GET", `/v1/streams/${enc(path)}/events`);
    expect(read.body.events.map((e: { payload: { content: string } }) => e.payload.content)).toEqual(["before"]);
  });
});
