// Given/when/then specs of the script-authority rules: grant folding, the "a key cannot grant
// what it does not hold" check, and the effective grant of a script (agent ∩ requesting key).
import { describe, expect, it } from "vitest";
import {
  type AgentEvent,
  agentGrantSchema,
  agentScopes,
  applyGrantEvent,
  authorityRefusal,
  grantExcess,
  grantOfEvents,
  parseEventInput,
  pathUnder,
  requesterSchema,
  type ScriptAuthority,
  scopesAllow,
  scopesWithin,
  UNBORN_GRANT,
} from "../src/index.ts";

const stored = (offset: number, input: { type: string; payload: unknown }): AgentEvent =>
  ({ ...parseEventInput(input), streamPath: "/agents/a", offset, createdAt: "2026-01-01T00:00:00.000Z" }) as AgentEvent;

describe("pathUnder", () => {
  it("matches at segment boundaries only", () => {
    expect(pathUnder("/agents/a", "/agents/a")).toBe(true);
    expect(pathUnder("/agents/a/x", "/agents/a")).toBe(true);
    expect(pathUnder("/agents/ab", "/agents/a")).toBe(false);
    expect(pathUnder("/anything", "/")).toBe(true);
  });
});

describe("the grant of an agent (fold)", () => {
  it("given a created event with a grant, when configured with another, then the last one replaces it", () => {
    const events = [
      stored(1, { type: "agent/created", payload: { grant: [{ prefix: "/shared/a", verbs: ["read"] }] } }),
      stored(2, { type: "agent/configured", payload: { config: { maxAutonomousTurns: 5 } } }),
      stored(3, { type: "agent/configured", payload: { config: {}, grant: [{ prefix: "/shared/b", verbs: ["append"] }] } }),
    ];
    const grants = events.map((_, i) => events.slice(0, i + 1).reduce(applyGrantEvent, UNBORN_GRANT).grant);
    expect(grants).toEqual([
      [{ prefix: "/shared/a", verbs: ["read"] }],
      [{ prefix: "/shared/a", verbs: ["read"] }],
      [{ prefix: "/shared/b", verbs: ["append"] }],
    ]);
  });

  it("an empty grant revokes everything beyond the agent's own subtree", () => {
    const events = [
      stored(1, { type: "agent/created", payload: { grant: [{ prefix: "/shared", verbs: ["read"] }] } }),
      stored(2, { type: "agent/configured", payload: { config: {}, grant: [] } }),
    ];
    expect(events.reduce(applyGrantEvent, UNBORN_GRANT).grant).toEqual([]);
  });

  it("given a born agent, when another agent/created carries a grant, then it changes nothing (only agent/configured, an operate append, regrants)", () => {
    const granted = [{ prefix: "/shared/a", verbs: ["read"] }];
    const events = [
      stored(1, { type: "agent/created", payload: { grant: granted } }),
      stored(2, { type: "agent/created", payload: { grant: [{ prefix: "/agents", verbs: ["append"] }] } }),
      stored(3, { type: "agent/created", payload: { grant: [] } }),
    ];
    expect(events.reduce(applyGrantEvent, UNBORN_GRANT).grant).toEqual(granted);
    expect(grantOfEvents(events)).toEqual(granted);
    // And a birth certificate without a grant is the birth too: a later one grants nothing
    const bare = [stored(1, { type: "agent/created", payload: {} }), stored(2, { type: "agent/created", payload: { grant: granted } })];
    expect(grantOfEvents(bare)).toEqual([]);
    // And a configuration before the birth certificate does not stand in for it
    const configuredFirst = [stored(1, { type: "agent/configured", payload: { config: {} } }), stored(2, { type: "agent/created", payload: { grant: granted } })];
    expect(grantOfEvents(configuredFirst)).toEqual(granted);
  });

  it("refuses a grant whose prefix is not a stream path or whose verb is unknown", () => {
    expect(agentGrantSchema.safeParse([{ prefix: "agents/a", verbs: ["read"] }]).success).toBe(false);
    expect(agentGrantSchema.safeParse([{ prefix: "/agents/a", verbs: ["admin"] }]).success).toBe(false);
    expect(agentGrantSchema.safeParse([{ prefix: "/agents/a/", verbs: ["read"] }]).success).toBe(false);
    expect(() => parseEventInput({ type: "agent/configured", payload: { config: {}, grant: [{ prefix: "/x", verbs: [] }] } })).toThrow(/grant/);
  });
});

describe("grantExcess: a key cannot grant what it does not hold", () => {
  const key = [{ prefix: "/agents/a", verbs: ["read", "append"] }, { prefix: "/shared/docs", verbs: ["read"] }];

  it("given a grant inside the key's scopes, then nothing is in excess", () => {
    expect(grantExcess([{ prefix: "/agents/a/sub", verbs: ["read", "append"] }, { prefix: "/shared/docs/x", verbs: ["read"] }], key)).toBeNull();
  });

  it("given a verb the key lacks under that prefix, then that prefix and verb are named", () => {
    expect(grantExcess([{ prefix: "/shared/docs", verbs: ["read", "append"] }], key)).toEqual({ prefix: "/shared/docs", verb: "append" });
  });

  it("given a prefix wider than the key's, then it is in excess even though part of it is held", () => {
    expect(grantExcess([{ prefix: "/agents", verbs: ["read"] }], key)).toEqual({ prefix: "/agents", verb: "read" });
    expect(grantExcess([{ prefix: "/", verbs: ["read"] }], key)).toEqual({ prefix: "/", verb: "read" });
  });

  it("admin implies every verb", () => {
    expect(grantExcess([{ prefix: "/anything", verbs: ["read", "append"] }], [{ prefix: "/", verbs: ["admin"] }])).toBeNull();
  });
});

describe("authorityRefusal: the effective grant of a script", () => {
  const model: ScriptAuthority = { agentPath: "/agents/a", grant: [{ prefix: "/shared/board", verbs: ["read"] }] };

  it("given a model-written script, its own subtree is read- and append-able", () => {
    expect(authorityRefusal(model, "read", "/agents/a")).toBeNull();
    expect(authorityRefusal(model, "append", "/agents/a/researcher")).toBeNull();
  });

  it("given a granted prefix, only its verbs are allowed", () => {
    expect(authorityRefusal(model, "read", "/shared/board/today")).toBeNull();
    expect(authorityRefusal(model, "append", "/shared/board")).toBe("/shared/board is outside this script's grant (append: /agents/a)");
  });

  it("given another tenant's stream, the refusal names the path and what is held", () => {
    expect(authorityRefusal(model, "read", "/agents/b/x")).toBe("/agents/b/x is outside this script's grant (read: /agents/a, /shared/board)");
    expect(authorityRefusal(model, "read", "/agents/ab")).not.toBeNull();
  });

  it("given an API-requested script, it is limited to the requesting key's scope as well", () => {
    const api: ScriptAuthority = { ...model, requester: { keyId: "k1", scopes: [{ prefix: "/agents/a", verbs: ["append"] }] } };
    expect(authorityRefusal(api, "append", "/agents/a/sub")).toBeNull();
    expect(authorityRefusal(api, "read", "/agents/a")).toBe("/agents/a is outside the scope of key k1 that requested this script (read: none)");
    expect(authorityRefusal(api, "read", "/shared/board")).toMatch(/key k1/);
  });

  it("given a requesting key wider than the agent, the agent's grant still bounds the script", () => {
    const api: ScriptAuthority = { ...model, requester: { keyId: "root", scopes: [{ prefix: "/", verbs: ["admin"] }] } };
    expect(authorityRefusal(api, "read", "/agents/b")).toBe("/agents/b is outside this script's grant (read: /agents/a, /shared/board)");
  });
});

describe("grantOfEvents: the grant as a client (the UI) reads it from raw JSON events", () => {
  it("given raw events, the last valid grant on created/configured wins and malformed ones are ignored", () => {
    expect(
      grantOfEvents([
        { type: "agent/created", payload: { grant: [{ prefix: "/shared", verbs: ["read"] }] } },
        { type: "agents/context-added", payload: { grant: [{ prefix: "/ignored", verbs: ["read"] }] } },
        { type: "agent/configured", payload: { config: {}, grant: [{ prefix: "nope", verbs: ["read"] }] } },
        { type: "agent/configured", payload: null },
      ]),
    ).toEqual([{ prefix: "/shared", verbs: ["read"] }]);
    expect(grantOfEvents([{ type: "agent/configured", payload: { config: {}, grant: [] } }])).toEqual([]);
  });
});

describe("scopesWithin: the parts of a key's scopes a script on an agent could use", () => {
  const agentPath = "/agents/acme/bot";
  const reach = agentScopes({ agentPath, grant: [{ prefix: "/agents/shared", verbs: ["read"] }, { prefix: "/agents/acme/boss", verbs: ["append"], exact: true }] });

  it("given a key over several tenants, when narrowed to an agent's reach, then no prefix outside that reach is left", () => {
    // Given a key holding its own tenant, another tenant, and a wide read
    const key = [
      { prefix: "/agents/acme", verbs: ["read", "append", "operate"] },
      { prefix: "/agents/globex", verbs: ["admin"] },
      { prefix: "/agents", verbs: ["read"] },
    ];
    // When it is narrowed to the agent's reach
    const within = scopesWithin(key, reach);
    // Then only the agent's subtree and its grant's prefixes are named
    expect(within).toEqual([
      { prefix: agentPath, verbs: ["read", "append", "operate"] },
      { prefix: "/agents/acme/boss", verbs: ["read", "append", "operate"] },
      { prefix: "/agents/shared", verbs: ["read"] },
    ]);
    expect(JSON.stringify(within)).not.toContain("globex");
  });

  it("given a key scoped under the agent or under a granted prefix, then that narrower scope is kept as it is", () => {
    const key = [
      { prefix: `${agentPath}/child`, verbs: ["append"] },
      { prefix: "/agents/shared/docs", verbs: ["read"] },
      { prefix: "/agents/acme/boss/inbox", verbs: ["append"] },
    ];
    // The exact entry reaches only /agents/acme/boss itself, so a scope under it is of no use there
    expect(scopesWithin(key, reach)).toEqual([
      { prefix: `${agentPath}/child`, verbs: ["append"] },
      { prefix: "/agents/shared/docs", verbs: ["read"] },
    ]);
  });

  it("given an agent with its full grant of 64 entries and a key over all of it, then the stamp fits the requester schema", () => {
    // Review: 65 entries and more had failed the requester schema's bound of 64
    const grant = Array.from({ length: 64 }, (_, i) => ({ prefix: `/agents/shared/s${i}`, verbs: ["read" as const] }));
    const key = [{ prefix: "/", verbs: ["admin"] }, ...Array.from({ length: 63 }, (_, i) => ({ prefix: `/agents/shared/s${i}/deep`, verbs: ["append"] }))];
    const within = scopesWithin(key, agentScopes({ agentPath: "/agents/a", grant }));
    expect(within).toHaveLength(65);
    expect(requesterSchema.safeParse({ keyId: "k", scopes: within }).success).toBe(true);
    // (the deeper append scopes are covered by the admin entries over them, so they add nothing)
  });

  it("allows, for every path the agent reaches, exactly what the whole key allows", () => {
    const key = [
      { prefix: "/", verbs: ["read"] },
      { prefix: "/agents/acme", verbs: ["append", "operate"] },
      { prefix: "/agents/shared/docs", verbs: ["admin"] },
      { prefix: "/agents/globex", verbs: ["admin"] },
    ];
    const within = scopesWithin(key, reach);
    const paths = [agentPath, `${agentPath}/child`, "/agents/shared", "/agents/shared/docs", "/agents/shared/docs/a", "/agents/acme/boss"];
    for (const path of paths) {
      for (const verb of ["read", "append", "operate"]) {
        const inReach = scopesAllow(reach, verb, path) || verb === "operate";
        if (inReach) expect(scopesAllow(within, verb, path), `${verb} ${path}`).toBe(scopesAllow(key, verb, path));
      }
    }
    // And nothing outside it
    expect(scopesAllow(within, "read", "/agents/globex/x")).toBe(false);
    expect(scopesAllow(within, "read", "/agents/other")).toBe(false);
  });
});
