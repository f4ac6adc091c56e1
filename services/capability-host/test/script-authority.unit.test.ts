// The host's side of script authority, pure: which grant a requested script carries, and that
// every itx operation touching agent data is checked before it reaches the operation.
import { type AgentEvent, parseEventInput } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { accessOf, authorityAt, guardHostCalls, ItxGrantError } from "../src/authority/script-authority.ts";

const at = (offset: number, type: string, payload: unknown): AgentEvent =>
  ({ ...parseEventInput({ type, payload }), streamPath: "/agents/a", offset, createdAt: "2026-01-01T00:00:00.000Z" }) as AgentEvent;
const requested = (offset: number, requester?: unknown): AgentEvent =>
  at(offset, "capability-host/script-run-requested", {
    code: "return 1;",
    executionId: `x${offset}`,
    expiresAt: "2026-01-01T00:10:00.000Z",
    ...(requester === undefined ? {} : { requester }),
  });

describe("authorityAt", () => {
  const events = [
    at(1, "agent/created", { grant: [{ prefix: "/shared", verbs: ["read"] }] }),
    requested(2),
    at(3, "agent/configured", { config: {}, grant: [{ prefix: "/board", verbs: ["append"] }] }),
    requested(4, { keyId: "k1", scopes: [{ prefix: "/agents/a", verbs: ["append"] }] }),
  ];

  it("given a model-written request, the grant in force before it and no requester", () => {
    expect(authorityAt(events, 2)).toEqual({ agentPath: "/agents/a", grant: [{ prefix: "/shared", verbs: ["read"] }] });
  });

  it("given an API-requested script, the later grant and the stamped key", () => {
    expect(authorityAt(events, 4)).toEqual({
      agentPath: "/agents/a",
      grant: [{ prefix: "/board", verbs: ["append"] }],
      requester: { keyId: "k1", scopes: [{ prefix: "/agents/a", verbs: ["append"] }] },
    });
  });
});

describe("accessOf: every operation that touches agent data names its verb and path", () => {
  it.each([
    ["streams.read", ["/agents/b/x", {}], "read", "/agents/b/x"],
    ["streams.getEvent", ["/agents/b/x", { offset: 1 }], "read", "/agents/b/x"],
    ["agents.create", ["/agents/b/new"], "append", "/agents/b/new"],
    ["agents.create", ["researcher"], "append", "/agents/a/researcher"],
    ["agents.message", ["/agents/b"], "append", "/agents/b"],
    ["agent.append", [{ type: "agent/summary-updated", payload: {} }], "append", "/agents/a"],
    ["chat.sendMessage", ["hi"], "append", "/agents/a"],
    ["kv.get", ["k"], "read", "/agents/a"],
    ["kv.list", [""], "read", "/agents/a"],
    ["kv.set", ["k", 1], "append", "/agents/a"],
    ["kv.delete", ["k"], "append", "/agents/a"],
    ["files.text", ["a.md"], "read", "/agents/a"],
    ["files.bytes", ["a.md"], "read", "/agents/a"],
    ["files.list", [""], "read", "/agents/a"],
    ["files.write", ["a.md", "x"], "append", "/agents/a"],
    ["capabilityHost.getScriptResult", ["x1"], "read", "/agents/a"],
    ["provider.call", ["repo", "listPulls", []], "append", "/agents/a"],
  ])("%s %j needs %s on %s", (op, args, verb, path) => {
    expect(accessOf("/agents/a", op, args)).toMatchObject({ verb, path });
  });

  it("docs need no grant", () => {
    expect(accessOf("/agents/a", "docs.search", [{ q: "x" }])).toBeNull();
  });
});

describe("guardHostCalls", () => {
  const calls: string[] = [];
  const handler = async (op: string) => {
    calls.push(op);
    return "done";
  };
  const guarded = guardHostCalls(handler, { agentPath: "/agents/a", grant: [{ prefix: "/shared", verbs: ["read"] }] });

  it("given a call inside the grant, then the operation runs", async () => {
    await expect(guarded("streams.read", ["/shared/notes", {}])).resolves.toBe("done");
    await expect(guarded("agents.message", ["researcher", "hi"])).resolves.toBe("done");
  });

  it("given a cross-tenant call, then it is refused before the operation runs, naming the call, path and grant", async () => {
    calls.length = 0;
    const refused = guarded("streams.read", ["/agents/b/x", {}]);
    await expect(refused).rejects.toBeInstanceOf(ItxGrantError);
    await expect(refused).rejects.toThrow('itx.streams.get("/agents/b/x").read(): /agents/b/x is outside this script\'s grant (read: /agents/a, /shared)');
    await expect(guarded("agents.message", ["/agents/b", "pay for this"])).rejects.toThrow(
      'itx.agents.get("/agents/b").message(): /agents/b is outside this script\'s grant (append: /agents/a)',
    );
    expect(calls).toEqual([]);
  });

  it("given a script appending a grant to its own agent, then it is refused (grants come from keys)", async () => {
    await expect(guarded("agent.append", [{ type: "agent/configured", payload: { config: {}, grant: [{ prefix: "/", verbs: ["read"] }] } }])).rejects.toThrow(
      /scripts may not set an agent's grant/,
    );
  });

  it("given an API-requested script, its key's scope limits even the agent's own storage", async () => {
    const api = guardHostCalls(handler, { agentPath: "/agents/a", grant: [], requester: { keyId: "writer", scopes: [{ prefix: "/agents/a", verbs: ["append"] }] } });
    await expect(api("kv.set", ["k", 1])).resolves.toBe("done");
    await expect(api("kv.get", ["k"])).rejects.toThrow("itx.kv.get(): /agents/a is outside the scope of key writer that requested this script (read: none)");
    await expect(api("files.text", ["a.md"])).rejects.toThrow(/itx\.files\.get\("a\.md"\)\.text\(\): .*key writer/);
  });
});
