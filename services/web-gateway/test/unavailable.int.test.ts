// When NATS is gone the gateway answers 503 `unavailable` (retryable), not 500, and recovers
// by itself once NATS is back.
import { describe, expect, it } from "vitest";
import { userMessage, waitFor } from "@agentrt/testing";
import { useDevGateway } from "./support/gateway-harness.ts";
import { enc, http } from "./support/http.ts";

const fx = useDevGateway();

describe("NATS outage", () => {
  it("503 while NATS is down, then serves again", { timeout: 90_000 }, async () => {
    const path = "/agents/outage/a";
    expect((await http(fx.gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [{ type: "agent/created", payload: {} }, userMessage("before")] } })).status).toBe(200);
    await fx.ts.nats.kill("SIGKILL");
    const down = await http(fx.gw.url, "POST", `/v1/streams/${enc(path)}/events`, { body: { events: [userMessage("during")] } });
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe("unavailable");
    await fx.ts.nats.restart();
    await waitFor(async () => (await http(fx.gw.url, "GET", `/v1/streams/${enc(path)}/events`)).status === 200, { timeoutMs: 60_000, intervalMs: 250, what: "reads after NATS is back" });
    const read = await http(fx.gw.url, "GET", `/v1/streams/${enc(path)}/events`);
    expect(read.body.events.map((e: { type: string; payload: { content?: string } }) => e.payload.content ?? e.type)).toEqual(["agent/created", "before"]);
  });
});
