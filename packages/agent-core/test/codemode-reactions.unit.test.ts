// Given the agent's state before an event, when the built-in codemode reactions run, then
// they append exactly the batches codemode.md lists (fenced dialect and settlement renders).
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_AGENT_CONFIG, type AgentEvent, type AgentConfig } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { codemodeReactions } from "../src/codemode/index.ts";
import { initialAgentState } from "../src/fold/fold.ts";
import type { AgentState } from "../src/state.ts";

// CI checks out shared/ beside the clone; locally it is /work/shared beside /work/main.
const SPEC = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../shared/spec/scenarios");
interface FixtureEvent {
  offset: number;
  createdAt: string;
  type: string;
  payload: unknown;
}
const script1b = parse(readFileSync(`${SPEC}/1b-script.yaml`, "utf8")) as {
  events: FixtureEvent[];
  expect: { derived: { from_offset: number; type: string; payload: Record<string, unknown> }[] };
};
const fixtureEvent = (offset: number): AgentEvent => {
  const e = script1b.events.find((x) => x.offset === offset);
  if (e === undefined) throw new Error(`fixture has no event @${offset}`);
  return { streamPath: "/agents/web/demo", ...e } as AgentEvent;
};

function stateWith(overrides: Partial<Omit<AgentState, "config">> & { config?: Partial<AgentConfig> } = {}): AgentState {
  const { config, ...rest } = overrides;
  // Derived from the real initial state, so a new state field never silently diverges.
  return { ...initialAgentState("/agents/web/demo"), birthCertificate: { createdAtOffset: 5 }, config: { ...DEFAULT_AGENT_CONFIG, ...config }, ...rest };
}

const fence = "```";
const openAt = (offset: number) => ({ requestedAtOffset: offset, expiresAt: "2026-08-24T17:01:10.000Z", model: "m" });
const assistant = (offset: number, content: string, llmRequestOffset = 31): AgentEvent => ({
  streamPath: "/agents/web/demo",
  offset,
  createdAt: "2026-08-24T16:51:14.000Z",
  type: "agents/context-added",
  payload: { role: "assistant", content, llmRequestOffset },
});

describe("codemodeReactions: the fenced interpreter", () => {
  const reply = `let me check!\n${fence}ts status="Counting open PRs"\nasync (itx) => (await itx.repo.listPulls({ state: "open" })).length\n${fence}`;

  it("appends status, script request and prose, in order, as ONE batch", () => {
    const batches = codemodeReactions(stateWith({ openRequest: openAt(31) }), assistant(33, reply));
    expect(batches).toEqual([
      [
        { type: "agent/summary-updated", payload: { activity: "Counting open PRs" }, idempotencyKey: "agent/codemode-status@33" },
        {
          type: "capability-host/script-run-requested",
          payload: {
            code: 'async (itx) => (await itx.repo.listPulls({ state: "open" })).length',
            executionId: "agent-output:33",
            expiresAt: "2026-08-24T17:01:14.000Z",
          },
          idempotencyKey: "agent/script-run-requested@33",
        },
        {
          type: "agents/web-message-sent",
          payload: { message: "let me check!", llmRequestOffset: 31 },
          idempotencyKey: "agent/codemode-prose@33",
        },
      ],
    ]);
  });

  it("computes expiresAt from the assistant item's createdAt and the configured expiry", () => {
    const [batch] = codemodeReactions(stateWith({ openRequest: openAt(31), config: { llmRequestExpiryMs: 60_000 } }), assistant(33, reply));
    expect(batch?.find((e) => e.type === "capability-host/script-run-requested")?.payload).toMatchObject({
      expiresAt: "2026-08-24T16:52:14.000Z",
    });
  });

  it("does nothing for a reply that is not the open request's (a zombie's late output)", () => {
    expect(codemodeReactions(stateWith({ openRequest: openAt(30) }), assistant(33, reply))).toEqual([]);
    expect(codemodeReactions(stateWith({ openRequest: null }), assistant(33, reply))).toEqual([]);
  });

  it("does nothing when responses are interpreted by a project worker instead", () => {
    expect(codemodeReactions(stateWith({ openRequest: openAt(31), config: { interpretResponses: false } }), assistant(33, reply))).toEqual([]);
  });

  it("does nothing for user, developer or system items", () => {
    const user: AgentEvent = { ...assistant(33, reply), payload: { role: "user", content: reply, llmRequestOffset: 31 } } as AgentEvent;
    expect(codemodeReactions(stateWith({ openRequest: openAt(31) }), user)).toEqual([]);
  });

  it("sends a prose-only reply as a web message and requests no script", () => {
    expect(codemodeReactions(stateWith({ openRequest: openAt(31) }), assistant(33, "Hello there."))).toEqual([
      [{ type: "agents/web-message-sent", payload: { message: "Hello there.", llmRequestOffset: 31 }, idempotencyKey: "agent/codemode-prose@33" }],
    ]);
  });

  it("answers several fences with developer feedback that nothing ran", () => {
    const two = `${fence}ts\nasync () => 1\n${fence}\n${fence}ts\nasync () => 2\n${fence}`;
    const batches = codemodeReactions(stateWith({ openRequest: openAt(31) }), assistant(33, two));
    expect(batches).toHaveLength(1);
    expect(batches[0]).toHaveLength(1);
    const [feedback] = batches[0] ?? [];
    expect(feedback?.idempotencyKey).toBe("agent/multi-snippet-rejected@33");
    expect(feedback?.type).toBe("agents/context-added");
    expect(feedback?.payload).toMatchObject({ role: "developer", llmRequestPolicy: { behaviour: "after-current-request" } });
    expect((feedback?.payload as { content: string }).content).toMatch(/^Your response contained 2 fenced code blocks, so NOTHING was executed\. /);
    expect(feedback?.payload).not.toHaveProperty("actor");
  });

  it("answers a non-async fence with the malformed feedback", () => {
    const batches = codemodeReactions(stateWith({ openRequest: openAt(31) }), assistant(33, `${fence}ts\nreturn 1;\n${fence}`));
    expect(batches[0]?.[0]?.idempotencyKey).toBe("agent/malformed-snippet-rejected@33");
    expect((batches[0]?.[0]?.payload as { content: string }).content).toMatch(/^Your code block did NOT run\. /);
  });
});

describe("codemodeReactions: rendering a settlement back", () => {
  const requested = fixtureEvent(34);
  const active = { executionId: "agent-output:33", requestedAt: requested.createdAt, requestedOffset: 34 };

  it("scenario 1b @36 → @37: the exact rendered result, actor and policy", () => {
    const expected = script1b.expect.derived.find((d) => d.from_offset === 36);
    const batches = codemodeReactions(stateWith({ activeScriptExecutions: [active] }), fixtureEvent(36));
    expect(batches).toEqual([[{ type: expected?.type, payload: expected?.payload, idempotencyKey: "agent/render-script-result@36" }]]);
    expect((batches[0]?.[0]?.payload as { content: string }).content).toBe(
      "Your script returned (in 1.8s):\n```json\n7\n```\nThis result is available to your next script as `results[0].data` (the preamble `results` array, newest first).",
    );
  });

  it("renders regardless of which dialect interprets replies", () => {
    const state = stateWith({ activeScriptExecutions: [active], config: { interpretResponses: false } });
    expect(codemodeReactions(state, fixtureEvent(36))).toHaveLength(1);
  });

  it("renders only executions the agent itself requested", () => {
    const other = { ...active, executionId: "api:xyz" };
    expect(codemodeReactions(stateWith({ activeScriptExecutions: [other] }), fixtureEvent(36))).toEqual([]);
  });

  it("appends nothing for an undefined result (no turn follows)", () => {
    const settled = { ...fixtureEvent(36), payload: { executionId: "agent-output:33", settlement: { status: "succeeded" } } } as AgentEvent;
    expect(codemodeReactions(stateWith({ activeScriptExecutions: [active] }), settled)).toEqual([]);
  });

  it("for a result longer than the history limit, appends the truthful truncated form", () => {
    const big = Array.from({ length: 200 }, (_, i) => ({ id: i, title: `pull request number ${i}` }));
    const settled = { ...fixtureEvent(36), payload: { executionId: "agent-output:33", settlement: { status: "succeeded", result: big } } } as AgentEvent;
    const batches = codemodeReactions(stateWith({ activeScriptExecutions: [active], config: { scriptResultHistoryLimit: 2000 } }), settled);
    const content = (batches[0]?.[0]?.payload as { content: string }).content;
    expect(content.length).toBeLessThanOrEqual(2000);
    expect(content).toContain(`… truncated (${JSON.stringify(big, null, 2).length} chars total; up to 2000 render inline — return less: slice arrays, pick fields)`);
    expect(batches[0]?.[0]?.idempotencyKey).toBe("agent/render-script-result@36");
  });
});
