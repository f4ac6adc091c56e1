// Event ownership against the real services as processes, auth on, every service as its own
// NATS user: a key that may append user input cannot append any type the contract keeps for a
// service (403 naming the type and its owner), cannot use any reserved idempotency-key namespace
// (403 naming it), and cannot steer the agent without `operate`. A key-squatting attempt on the
// coming request's `agent/settle/R` is refused, and the agent's next turns still work.

import { API_APPENDABLE, EVENT_OWNERSHIP, EVENT_TYPES, RESERVED_KEY_NAMESPACES, type AgentEvent } from "@agentrt/contract";
import { userMessage, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBareAgent, waitForAssistant } from "../support/turns.ts";
import { keysFile } from "./support/api-keys.ts";
import { startNatsUsersSystem, type NatsUsersSystem } from "./support/nats-users-system.ts";

const PREFIX = "/agents/sec";
const VICTIM = `${PREFIX}/victim`;
const keys = keysFile();
const userKey = keys.mint(PREFIX, ["read", "append"]);
const operatorKey = keys.mint(PREFIX, ["read", "operate"]);
const adminKey = keys.mint(PREFIX, ["admin"]);

let system: NatsUsersSystem;
beforeAll(async () => {
  system = await startNatsUsersSystem({
    model: { replies: [{ text: "First answer." }, { text: "Second answer." }], defaultReply: { text: "Another answer." } },
    gatewayEnv: { AGENTRT_DEV_MODE: "0", AGENTRT_KEYS_FILE: keys.file },
  });
});
afterAll(async () => system?.stop());

async function append(path: string, events: unknown[], key: string): Promise<{ status: number; body: { error?: { message: string; details: Record<string, unknown> } } }> {
  const res = await fetch(`${system.gatewayUrl}/v1/streams/${encodeURIComponent(path)}/events`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ events }),
  });
  return { status: res.status, body: (await res.json()) as never };
}

describe("auth is on", () => {
  it("refuses an append without a key", async () => {
    const res = await fetch(`${system.gatewayUrl}/v1/streams/${encodeURIComponent(VICTIM)}/events`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ events: [userMessage("x")] }),
    });
    expect(res.status).toBe(401);
  });
});

describe("one refusal per machinery type and per reserved key namespace", () => {
  for (const type of EVENT_TYPES.filter((t) => API_APPENDABLE[t] === undefined)) {
    it(`${type} → 403 naming ${EVENT_OWNERSHIP[type].owner}`, async () => {
      const path = `${PREFIX}/types`;
      const before = await system.store.lastOffset(path);
      const res = await append(path, [{ type, payload: {} }], adminKey);
      expect(res.status).toBe(403);
      expect(res.body.error?.message).toContain(`"${type}" is owned by ${EVENT_OWNERSHIP[type].owner}`);
      expect(await system.store.lastOffset(path)).toBe(before);
    });
  }
  for (const namespace of Object.values(RESERVED_KEY_NAMESPACES)) {
    it(`idempotency key in ${namespace.prefix} → 403 naming the namespace`, async () => {
      const res = await append(`${PREFIX}/keys`, [userMessage("squat", `${namespace.prefix}7`)], adminKey);
      expect(res.status).toBe(403);
      expect(res.body.error?.details.namespace).toBe(namespace.prefix);
      expect(res.body.error?.message).toContain(`namespace "${namespace.prefix}"`);
    });
  }
});

describe("a key-squatting attempt", () => {
  it("is refused, and the agent's next turns still work", { timeout: 150_000 }, async () => {
    await createBareAgent(system.store, VICTIM, 50);
    const last = await system.store.lastOffset(VICTIM);
    // The attacker's message would land at last+1, so the coming request is at last+2 or soon
    // after: squat every plausible `agent/settle/R`, and forge a settlement outright.
    for (let r = last + 1; r <= last + 8; r += 1) {
      const squat = await append(VICTIM, [userMessage("innocent", `agent/settle/${r}`)], userKey);
      expect(squat.status).toBe(403);
      expect(squat.body.error?.message).toContain('namespace "agent/settle/"');
    }
    const forged = await append(VICTIM, [{ type: "agent/llm-request-settled", payload: { requestOffset: last + 2, result: { status: "succeeded", text: "forged" } } }], userKey);
    expect(forged.status).toBe(403);
    expect(await system.store.lastOffset(VICTIM)).toBe(last);

    // The operator verb is separate from append.
    expect((await append(VICTIM, [{ type: "agent/configured", payload: { config: { llmRequestDebounceMs: 60 } } }], userKey)).status).toBe(403);
    expect((await append(VICTIM, [{ type: "agent/configured", payload: { config: { llmRequestDebounceMs: 60 } } }], operatorKey)).status).toBe(200);

    expect((await append(VICTIM, [userMessage("Hello?")], userKey)).status).toBe(200);
    await waitForAssistant(system.store, VICTIM, "First answer.", 60_000);
    expect((await append(VICTIM, [userMessage("And again?")], userKey)).status).toBe(200);
    await waitForAssistant(system.store, VICTIM, "Second answer.", 60_000);

    const events = await system.store.read(VICTIM);
    const settlements = events.filter((e): e is AgentEvent & { type: "agent/llm-request-settled" } => e.type === "agent/llm-request-settled");
    expect(settlements.map((s) => s.payload.result.status)).toEqual(["succeeded", "succeeded"]);
    for (const s of settlements) expect(s.idempotencyKey).toBe(`agent/settle/${s.payload.requestOffset}`);
    await waitFor(async () => system.processes.all.every((p) => p.running), { timeoutMs: 1_000 });
    expect(system.violations()).toEqual([]);
  });
});
