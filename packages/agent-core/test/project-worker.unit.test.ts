// Given scenario 1 and 1b (the fixtures), when the built-in project worker reacts, then it
// reproduces the birth batch, the birth reaction and the tag-dialect interpreter's events.
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_AGENT_CONFIG, type AgentConfig, type AgentEvent, type EventInput } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { birthBatch, parseTaggedPromptFile, projectWorkerReactions, PromptFileParseError } from "../src/project-worker/index.ts";
import { initialAgentState } from "../src/fold/fold.ts";
import type { AgentState } from "../src/state.ts";

// CI checks out shared/ beside the clone; locally it is /work/shared beside /work/main.
const SPEC = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../shared/spec/scenarios");
interface FixtureEvent {
  offset: number;
  createdAt: string;
  type: string;
  payload: Record<string, unknown>;
}
const birth = parse(readFileSync(`${SPEC}/1-birth.yaml`, "utf8")) as {
  events: FixtureEvent[];
  expect: { worker_reaction_after_offset_20: { type: string; payload: unknown }[] };
};
const script1b = parse(readFileSync(`${SPEC}/1b-script.yaml`, "utf8")) as {
  events: FixtureEvent[];
  expect: { derived: { from_offset: number; type: string; payload: Record<string, unknown> }[]; no_script_for_offsets: number[] };
};
const allEvents = [...birth.events, ...script1b.events];
const at = (offset: number): AgentEvent => {
  const e = allEvents.find((x) => x.offset === offset);
  if (e === undefined) throw new Error(`fixture has no event @${offset}`);
  return { streamPath: "/agents/web/demo", ...e } as AgentEvent;
};

function stateWith(overrides: Partial<Omit<AgentState, "config">> & { config?: Partial<AgentConfig> } = {}): AgentState {
  const { config, ...rest } = overrides;
  // Derived from the real initial state, so a new state field never silently diverges.
  return { ...initialAgentState("/agents/web/demo"), birthCertificate: { createdAtOffset: 5 }, config: { ...DEFAULT_AGENT_CONFIG, ...config }, ...rest };
}

/** The state before an assistant reply under the tag dialect: its request is open. */
function replyState(reply: AgentEvent): AgentState {
  const requestOffset = (reply.payload as { llmRequestOffset: number }).llmRequestOffset;
  return stateWith({
    config: { interpretResponses: false, llmRequestDebounceMs: 250 },
    openRequest: { requestedAtOffset: requestOffset, expiresAt: "2026-08-24T17:01:10.000Z", model: "openai/gpt-5.6-terra" },
  });
}

const strip = (events: readonly EventInput[]) => events.map(({ type, payload }) => ({ type, payload }));

describe("parseTaggedPromptFile", () => {
  it("returns the sections in file order, content trimmed", () => {
    const text = '<section key="identity">\n  You are an agent.\n\n  Be brief.\n</section>\n\n<section key="b">one-liner</section>\n';
    expect(parseTaggedPromptFile(text)).toEqual([
      { key: "identity", content: "You are an agent.\n\n  Be brief." },
      { key: "b", content: "one-liner" },
    ]);
  });

  it("allows blank lines and HTML comments between sections", () => {
    expect(parseTaggedPromptFile('<!-- prompt v2\n  notes -->\n\n<section key="a">\nx\n</section>')).toEqual([{ key: "a", content: "x" }]);
  });

  it.each([
    ['<section key="a">\nx\n', 1, 'section "a" is never closed'],
    ['<section key="a">\nx\n</section>\nstray text\n', 4, "text outside a <section"],
    ['<section key="a">\n<section key="b">\n</section>', 2, 'a section opens inside section "a"'],
    ["</section>", 1, "closes no open section"],
    ["<section name='a'>\n</section>", 1, 'must read <section key="KEY">'],
    ['<section key="a">x</section>\n<section key="a">y</section>', 2, 'duplicate section key "a" (first at line 1)'],
    ['<section key="">x</section>', 1, "must not be empty"],
  ])("rejects malformed input %j naming line %d", (text, line, rule) => {
    let error: unknown;
    try {
      parseTaggedPromptFile(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PromptFileParseError);
    expect((error as PromptFileParseError).line).toBe(line);
    expect((error as PromptFileParseError).code).toBe("invalid_payload");
    expect((error as Error).message).toContain(`line ${line}:`);
    expect((error as Error).message).toContain(rule);
  });
});

describe("parseTaggedPromptFile at its bounds", () => {
  it("takes a key of 256 characters and 500 sections, whose birth batch fits one append", () => {
    const text = [`<section key="${"k".repeat(256)}">x</section>`, ...Array.from({ length: 499 }, (_, i) => `<section key="s${i}">x</section>`)].join("\n");
    const sections = parseTaggedPromptFile(text);
    expect(sections).toHaveLength(500);
    const batch = birthBatch({ promptFileText: text, project: { name: "P", slug: "p" }, streamPath: "/agents/p", workspace: "/w", configRepo: "/c" });
    expect(batch.length).toBeLessThanOrEqual(1000);
    expect(Math.max(...batch.map((e) => e.idempotencyKey?.length ?? 0))).toBeLessThanOrEqual(512);
  });

  it("refuses a key of 257 characters and a 501st section, naming the line and the bound", () => {
    const refusal = (text: string) => {
      try {
        parseTaggedPromptFile(text);
      } catch (error) {
        return error as PromptFileParseError;
      }
      throw new Error("accepted");
    };
    const long = refusal(`<section key="a">x</section>\n<section key="${"k".repeat(257)}">x</section>`);
    expect([long.line, long.code, long.message]).toEqual([2, "invalid_payload", "Tagged prompt file, line 2: a section key is at most 256 characters, this one has 257."]);
    const many = refusal(Array.from({ length: 501 }, (_, i) => `<section key="s${i}">x</section>`).join("\n"));
    expect([many.line, many.message]).toEqual([501, "Tagged prompt file, line 501: a prompt file holds at most 500 sections."]);
  });
});

describe("birthBatch", () => {
  it("reproduces scenario 1's birth batch @5–@20 from the tagged prompt file", () => {
    const sections = birth.events.filter((e) => e.offset >= 10 && e.offset <= 19);
    const promptFileText = sections.map((e) => `<section key="${e.payload.key}">\n${e.payload.content}\n</section>`).join("\n\n");
    const batch = birthBatch({
      promptFileText,
      project: { name: "demo", slug: "demo" },
      streamPath: "/agents/web/demo",
      workspace: "/agents/web/demo",
      configRepo: "/repos/config",
    });
    const expected = birth.events.filter((e) => e.offset <= 20).map(({ type, payload }) => ({ type, payload }));
    // The certificate's payload is open; the project rides along so its worker can claim the agent.
    expect(batch[0]).toMatchObject({ type: "agent/created", payload: { ...expected[0]?.payload, project: { name: "demo", slug: "demo" } } });
    expect(strip(batch.slice(1))).toEqual(expected.slice(1));
    expect(new Set(batch.map((e) => e.idempotencyKey)).size).toBe(batch.length);
  });

  it("refuses a malformed prompt file (nothing is created)", () => {
    expect(() =>
      birthBatch({ promptFileText: "oops", project: { name: "p", slug: "p" }, streamPath: "/a", workspace: "/a", configRepo: "/r" }),
    ).toThrow(PromptFileParseError);
  });
});

describe("projectWorkerReactions: birth", () => {
  const born = stateWith({ birthCertificate: null });

  it("reacts to the first agent/created with ONE batch equal to scenario 1's @21–@23", () => {
    const batches = projectWorkerReactions(born, at(5));
    expect(batches).toHaveLength(1);
    expect(strip(batches[0] ?? [])).toEqual(birth.expect.worker_reaction_after_offset_20);
    expect(batches[0]?.map((e) => e.idempotencyKey)).toEqual([
      "worker/birth@5/agents-md",
      "worker/birth@5/output-formatting",
      "worker/birth@5/configured",
    ]);
  });

  it("uses the project's own AGENTS.md and output-formatting texts when given", () => {
    const [batch] = projectWorkerReactions(born, at(5), { agentsMd: "Be kind.", outputFormatting: "Use tags." });
    expect(batch?.[0]?.payload).toEqual({ role: "system", key: "config/agents-md", content: "Be kind." });
    expect(batch?.[1]?.payload).toEqual({ role: "system", key: "output-formatting", content: "Use tags." });
  });

  it("ignores a later agent/created (only the first is the birth certificate)", () => {
    expect(projectWorkerReactions(stateWith(), { ...at(5), offset: 50 } as AgentEvent)).toEqual([]);
  });
});

describe("projectWorkerReactions: the tag-dialect interpreter", () => {
  it("scenario 1b @33: status, the derived script request (expiring 10 min after @33) and prose", () => {
    const reply = at(33);
    const batches = projectWorkerReactions(replyState(reply), reply);
    const derived = script1b.expect.derived.find((d) => d.from_offset === 33);
    expect(batches).toEqual([
      [
        { type: "agent/summary-updated", payload: { activity: "Counting open PRs" }, idempotencyKey: "agent/codemode-status@33" },
        {
          type: derived?.type,
          payload: { ...derived?.payload, expiresAt: "2026-08-24T17:01:14.000Z" },
          idempotencyKey: "agent/script-run-requested@33",
        },
        { type: "agents/web-message-sent", payload: { message: "let me check!", llmRequestOffset: 31 }, idempotencyKey: "agent/codemode-prose@33" },
      ],
    ]);
    // The fixture's @34 is exactly this request.
    expect(batches[0]?.[1]?.payload).toEqual(at(34).payload);
  });

  it.each(script1b.expect.no_script_for_offsets)("no script for @%d (`return` ends the turn); status and prose still land", (offset) => {
    const reply = at(offset);
    const batches = projectWorkerReactions(replyState(reply), reply);
    const types = (batches[0] ?? []).map((e) => e.type);
    expect(types).toEqual(["agent/summary-updated", "agents/web-message-sent"]);
    expect(batches[0]?.[0]?.payload).toEqual({ activity: "Idle" });
  });

  it("answers two blocks with feedback that nothing ran", () => {
    const reply = { ...at(33), payload: { role: "assistant", llmRequestOffset: 31, content: "<codemode>\nreturn 1;\n</codemode>\n<codemode>\nreturn 2;\n</codemode>" } } as AgentEvent;
    const batches = projectWorkerReactions(replyState(reply), reply);
    expect(batches[0]).toHaveLength(1);
    expect(batches[0]?.[0]?.idempotencyKey).toBe("agent/multi-snippet-rejected@33");
    expect(batches[0]?.[0]?.payload).toMatchObject({ role: "developer", llmRequestPolicy: { behaviour: "after-current-request" } });
    expect((batches[0]?.[0]?.payload as { content: string }).content).toContain("NOTHING was executed");
  });

  it("answers an unclosed block with malformed feedback that it did NOT run", () => {
    const reply = { ...at(33), payload: { role: "assistant", llmRequestOffset: 31, content: "hm\n<codemode>\nreturn 1;" } } as AgentEvent;
    const batches = projectWorkerReactions(replyState(reply), reply);
    expect(batches[0]?.[0]?.idempotencyKey).toBe("agent/malformed-snippet-rejected@33");
    expect((batches[0]?.[0]?.payload as { content: string }).content).toContain("did NOT run");
  });

  it("stays silent while the platform's fenced interpreter is on, and for a zombie's reply", () => {
    const reply = at(33);
    expect(projectWorkerReactions({ ...replyState(reply), config: DEFAULT_AGENT_CONFIG }, reply)).toEqual([]);
    expect(projectWorkerReactions({ ...replyState(reply), openRequest: null }, reply)).toEqual([]);
  });

  it("does not render settlements (the codemode reactions do)", () => {
    const state = stateWith({ activeScriptExecutions: [{ executionId: "agent-output:33", requestedAt: at(34).createdAt, requestedOffset: 34 }] });
    expect(projectWorkerReactions(state, at(36))).toEqual([]);
  });
});
