// Message rendering (rendering.md "Messages"): metadata lines, provenance formats, agent mail,
// attached files, trust demotion, and rendering a request from the raw stream.

import { describe, expect, it } from "vitest";
import {
  IncrementalRequestRenderer,
  RequestNotRenderableError,
  foldAgentEvent,
  StreamRequestRenderer,
  foldAgentEvents,
  initialAgentState,
  renderRequest,
  renderRequestAt,
} from "../src/index.ts";
import { given } from "./support/given.ts";
import { PATH, TestStream } from "./support/stream.ts";

function lastMessage(...payloads: Parameters<TestStream["context"]>[0][]) {
  const s = new TestStream();
  const events = [s.created(), ...payloads.map((p) => s.context(p))];
  return renderRequest(given(...events).state).at(-1);
}

describe("metadata lines and roles", () => {
  it("a user item without refs renders bare", () => {
    expect(lastMessage({ role: "user", content: "hi", actor: { type: "user", origin: "web" } })).toEqual({ role: "user", content: "hi" });
  });

  it("a script result stays developer with its provenance", () => {
    expect(lastMessage({ role: "developer", content: "Your script returned (in 1.8s):", actor: { type: "script", executionId: "agent-output:33" } })).toEqual({
      role: "developer",
      content: '@2 actor=script:"agent-output:33"\nYour script returned (in 1.8s):',
    });
  });

  it("developer items from outside actors are demoted to user", () => {
    const cases: [Parameters<TestStream["context"]>[0]["actor"], string][] = [
      [{ type: "user", origin: "mcp", userId: "u1" }, "user:mcp"],
      [{ type: "integration", name: "github-webhook" }, 'integration:"github-webhook"'],
      [{ type: "slack", botName: "deploybot" }, 'slack:"deploybot"'],
      [{ type: "slack" }, 'slack:"unknown"'],
      [{ type: "telegram", username: "ann" }, 'telegram:"ann"'],
      [{ type: "email", address: "a@b.c", name: "A" }, 'email:"a@b.c"'],
      [{ type: "github", senderType: "Bot" }, 'github:"Bot"'],
    ];
    for (const [actor, formatted] of cases) {
      expect(lastMessage({ role: "developer", content: "x", actor })).toEqual({ role: "user", content: `@2 actor=${formatted}\nx` });
    }
  });

  it("a developer item with no actor stays developer; a system item gets its offset line", () => {
    expect(lastMessage({ role: "developer", content: "feedback" })).toEqual({ role: "developer", content: "@2\nfeedback" });
    expect(lastMessage({ role: "system", content: "rule" })).toEqual({ role: "system", content: "@2\nrule" });
  });

  it("refs give any role a metadata line, in their documented formats", () => {
    const message = lastMessage({
      role: "user",
      content: "look at these",
      actor: { type: "user", origin: "web" },
      refs: [
        { type: "event", streamPath: "/agents/web/other", offset: 12 },
        { type: "user", userId: "u7" },
        { type: "file", path: "docs/a.md" },
        { type: "git-commit", repoPath: "/repos/config", commitOid: "abc123" },
        { type: "repo-file", repoPath: "/repos/config", path: "AGENTS.md" },
      ],
    });
    expect(message).toEqual({
      role: "user",
      content:
        '@2 actor=user:web refs=["/agents/web/other@12","user:u7","file:docs/a.md","/repos/config@abc123","/repos/config/AGENTS.md@latest"]\nlook at these',
    });
  });

  it("mail from another agent carries the reply line", () => {
    expect(lastMessage({ role: "developer", content: "done: 3 PRs", actor: { type: "agent", path: "/agents/web/researcher" } })).toEqual({
      role: "developer",
      content:
        '@2 actor=agent:"/agents/web/researcher"\ndone: 3 PRs\nTo reply to /agents/web/researcher (which cannot see this conversation): await itx.agents.get("/agents/web/researcher").message(text)',
    });
  });

  it("attached files become hint lines", () => {
    const file = { contentType: "text/csv", filename: "data.csv", path: "uploads/data.csv", size: 42, url: "https://files/x" };
    expect(lastMessage({ role: "user", content: "see file", files: [file] })).toEqual({
      role: "user",
      content:
        'see file\n[Attached file: data.csv (text/csv, 42 bytes) — bytes: await itx.files.get("uploads/data.csv").bytes(); public url: https://files/x]',
    });
  });

  it("the metadata line never spills onto a second line", () => {
    const message = lastMessage({ role: "developer", content: "x", actor: { type: "integration", name: "evil\nname" } });
    expect(message?.content.split("\n")[0]).toBe('@2 actor=integration:"evil\\nname"');
  });
});

describe("rendering a request from the stream", () => {
  const s = new TestStream();
  const events = [s.created(), s.section("identity", "be kind"), s.user("one"), s.requested()];
  events.push(s.assistant("answer one", 4), s.succeeded(4), s.user("two"));
  const second = s.requested();
  events.push(second, s.assistant("answer two", second.offset), s.user("three"));

  it("folds up to and including R, ignoring what came after", () => {
    const upToSecond = renderRequestAt(events, second.offset);
    expect(upToSecond).toEqual(renderRequest(foldAgentEvents(initialAgentState(PATH), events.slice(0, 8))));
    expect(upToSecond.at(-1)).toEqual({ role: "developer", content: `Requested at: ${second.createdAt}` });
  });

  it("refuses to render a request the fold ignored", () => {
    expect(() => renderRequestAt(events, 2)).toThrow(RequestNotRenderableError);
  });

  it("a per-stream renderer gives the same bytes while folding only new events", () => {
    const renderer = new StreamRequestRenderer(PATH);
    expect(renderer.renderAt(events, 4)).toEqual(renderRequestAt(events, 4));
    expect(renderer.renderAt(events, second.offset)).toEqual(renderRequestAt(events, second.offset));
    expect(renderer.canRender(4)).toBe(false);
    expect(() => renderer.renderAt(events, 4)).toThrow(RequestNotRenderableError);
  });
});

describe("the incremental renderer after history is rewritten", () => {
  it("matches the full render after every event, through coalesces, rewrites and a compaction", () => {
    const s = new TestStream();
    const events = [s.created(), s.section("a", "A1"), s.section("b", "B1"), s.section("a", "A2"), s.user("q1"), s.requested()];
    events.push(s.assistant("r1", 6), s.succeeded(6), s.section("b", "B2"), s.section("b", "B3"), s.user("q2"), s.requested());
    events.push(s.event("agents/context-rewritten", { op: "replace", key: "b", content: "B-redacted" }));
    events.push(s.event("agents/context-rewritten", { op: "delete", key: "a" }), s.section("c", "C1"));
    events.push(s.context({
      role: "developer",
      content: "summary of it all",
      compaction: { replacesHistoryThrough: 12 },
      llmRequestPolicy: { behaviour: "dont-trigger-request" },
    }));
    events.push(s.user("q3"), s.event("agents/context-rewritten", { op: "delete", key: "*" }), s.user("q4"));
    const renderer = new IncrementalRequestRenderer();
    let state = initialAgentState(PATH);
    let rebuilt = 0;
    for (const event of events) {
      const before = state.contextRevision ?? 0;
      state = foldAgentEvent(state, event);
      if ((state.contextRevision ?? 0) !== before) rebuilt += 1;
      expect(renderer.render(state), `after @${event.offset} ${event.type}`).toEqual(renderRequest(state));
    }
    // in-place coalesces (a, b), replace, delete a, compaction, delete *
    expect(rebuilt).toBe(6);
  });
});

describe("text stored before the well-formed rule", () => {
  it("given a message and a section holding lone surrogates (records from before the rule), when rendered either way, then the model gets U+FFFD in their place", () => {
    const s = new TestStream();
    const events = [s.created(), s.section("identity", "be \ud800 kind"), s.user("one \udc00 two"), s.requested()];
    const state = given(...events).state;
    const messages = renderRequest(state);
    expect(messages[1]?.content).toContain("be \ufffd kind");
    expect(messages.at(-2)?.content).toContain("one \ufffd two");
    expect(messages.every((m) => m.content.isWellFormed())).toBe(true);
    expect(new IncrementalRequestRenderer().render(state)).toEqual(messages);
  });
});
