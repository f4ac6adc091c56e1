// The reaction policy, given / when / then: the rules production runs (and replay and the
// specs with it) for a never-born stream, a bare agent, an agent born into a project, the
// worker switched off or given the project's own texts, the live dialect and the runtime.

import { describe, expect, it } from "vitest";
import {
  AGENTS_MD_KEY,
  DEFAULT_AGENTS_MD,
  PRODUCTION_REACTION_POLICY,
  foldAgentEvent,
  liveDialectOf,
  publishesRuntime,
  reactionPolicy,
  reactToEvent,
  WORKER_DEBOUNCE_MS,
} from "../src/index.ts";
import { given } from "./support/given.ts";
import { TestStream } from "./support/stream.ts";

const types = (events: readonly { type: string }[]) => events.map((e) => e.type);

describe("a stream that was never born", () => {
  it("gets no reaction: no error transcription, no mirror, no interpreter, no runtime", () => {
    const s = new TestStream();
    const spec = given();
    spec.when(s.event("stream/error-occurred", { message: "boom" })).then(({ appended, reaction }) => {
      expect(appended).toEqual([]);
      expect(reaction.runtimeChanged).toBeNull();
    });
    spec.when(s.event("agents/web-message-sent", { message: "hello" })).then(({ appended }) => expect(appended).toEqual([]));
  });

  it("does not interrupt or clear anything for user input", () => {
    const s = new TestStream();
    given().when(s.user("hi")).then(({ reaction }) => {
      expect(reaction.interrupt).toBeNull();
      expect(reaction.appends).toEqual([]);
    });
  });

  it("has no live dialect and publishes no runtime", () => {
    const state = given().state;
    expect(liveDialectOf(state)).toBeUndefined();
    expect(publishesRuntime(state)).toBe(false);
  });
});

describe("a bare agent (created without a project)", () => {
  it("gets no project-worker birth reaction: it keeps the birth window and the defaults", () => {
    const s = new TestStream();
    given().when(s.created()).then(({ appended, state }) => {
      expect(types(appended)).not.toContain("agent/configured");
      expect(appended.some((e) => e.type === "agents/context-added")).toBe(false);
      expect(publishesRuntime(state)).toBe(true);
    });
  });

  it("still gets the platform reactions once born (the error transcription)", () => {
    const s = new TestStream();
    given(s.created()).when(s.event("stream/error-occurred", { message: "boom" })).then(({ appended }) => {
      expect(appended).toHaveLength(1);
      expect(appended[0]).toMatchObject({ type: "agents/context-added", payload: { content: "Error on stream: boom" } });
    });
  });

  it("previews the fenced dialect while replies are interpreted", () => {
    const s = new TestStream();
    expect(liveDialectOf(given(s.created(), s.configured({ interpretResponses: true })).state)).toBe("fenced");
  });
});

describe("an agent born into a project", () => {
  it("gets the worker's birth batch: AGENTS.md, the tag dialect, interpretResponses off with the short debounce", () => {
    const s = new TestStream();
    given().when(s.createdInProject()).then(({ reaction }) => {
      expect(reaction.appends).toHaveLength(1);
      const [batch] = reaction.appends;
      expect(types(batch!)).toEqual(["agents/context-added", "agents/context-added", "agent/configured"]);
      expect(batch![0]!.payload).toMatchObject({ key: AGENTS_MD_KEY, content: DEFAULT_AGENTS_MD });
      expect(batch![2]!.payload).toEqual({ config: { interpretResponses: false, llmRequestDebounceMs: WORKER_DEBOUNCE_MS } });
    });
  });

  it("uses the deployment's texts when the policy carries them", () => {
    const s = new TestStream();
    const created = s.createdInProject();
    const after = foldAgentEvent(given().state, created);
    const policy = reactionPolicy({ texts: { agentsMd: "Be terse." } });
    const [batch] = reactToEvent(given().state, created, after, policy).appends;
    expect(batch![0]!.payload).toMatchObject({ key: AGENTS_MD_KEY, content: "Be terse." });
  });

  it("gets no birth reaction when the deployment switched the worker off, and previews nothing once not interpreted", () => {
    const s = new TestStream();
    const created = s.createdInProject();
    const off = reactionPolicy({ projectWorker: false });
    expect(reactToEvent(given().state, created, foldAgentEvent(given().state, created), off).appends).toEqual([]);
    const notInterpreted = given(created, s.configured({ interpretResponses: false })).state;
    expect(liveDialectOf(notInterpreted, off)).toBeUndefined();
    expect(liveDialectOf(notInterpreted, PRODUCTION_REACTION_POLICY)).toBe("tag");
  });

  it("a second certificate on the same stream gets nothing", () => {
    const s = new TestStream();
    given(s.createdInProject()).when(s.createdInProject()).then(({ appended }) => expect(appended).toEqual([]));
  });

  it("its tag-dialect replies are interpreted by the worker once interpretResponses is off", () => {
    const s = new TestStream();
    const events = [s.createdInProject(), s.configured({ interpretResponses: false }), s.user("hi"), s.requested()];
    const reply = s.assistant('Hello.\n<codemode status="Idle">return</codemode>', 4);
    given(...events).when(reply).then(({ appended }) => {
      expect(appended.length).toBeGreaterThan(0);
      expect(types(appended)).not.toContain("capability-host/script-run-requested");
    });
  });
});

describe("the production policy value", () => {
  it("is what reactionPolicy() builds with the defaults", () => {
    expect(reactionPolicy()).toEqual(PRODUCTION_REACTION_POLICY);
    expect(reactionPolicy({ projectWorker: true })).toEqual(PRODUCTION_REACTION_POLICY);
  });
});
