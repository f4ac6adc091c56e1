// Given an agent, when the chat's Stop / Pause / Resume batches are committed, then the pure
// core does what the buttons promise: Stop interrupts the running reply and starts no new turn,
// the pause holds until Resume or the user's next message, Resume releases it.

import { describe, expect, it } from "vitest";
import { given } from "./support/given.ts";
import { TestStream } from "./support/stream.ts";
import { chatControls, foldWireEventInto, initialChatFold, pauseBatch, resumeBatch, stopBatch, STOPPED_REASON } from "../src/display/index.ts";

describe("Stop", () => {
  it("interrupts the open request, then the head decides nothing: no new turn starts", () => {
    const s = new TestStream();
    const history = [s.created(), s.user("write me a long essay"), s.requested()];
    const [note, pause] = stopBatch().map((input) => s.commit(input));
    const afterNote = given(...history).when(note!).then(({ reaction }) => {
      expect(reaction.interrupt).toEqual({ requestOffset: 3 });
    });
    expect(afterNote.state.pendingLlmRequestTrigger?.source).toBe("agent-loop");
    // The interrupt settles the request as cancelled (what the reducer appends once the driver answered).
    const settled = s.event("agent/llm-request-settled", { requestOffset: 3, result: { status: "cancelled", reason: "interrupted-by-user-input" } });
    const stopped = given(...history, note!, pause!, settled);
    expect(stopped.state.paused).toEqual({ reason: STOPPED_REASON, atOffset: pause!.offset });
    expect(stopped.state.pendingLlmRequestTrigger).toBeNull();
    expect(stopped.state.openRequest).toBeNull();
    stopped.atHead(s.now + 3_600_000).then((d) => {
      expect(d.appends).toEqual([]);
      expect(d.wakeAtMs).toBeNull();
    });
  });

  it("with nothing running, still pauses and triggers nothing", () => {
    const s = new TestStream();
    const history = [s.created(), s.user("hi"), s.requested()];
    const done = s.event("agent/llm-request-settled", { requestOffset: 3, result: { status: "succeeded", text: "hello" } });
    const batch = stopBatch().map((input) => s.commit(input));
    given(...history, done).when(batch[0]!).then(({ reaction }) => expect(reaction.interrupt).toBeNull());
    given(...history, done, ...batch).atHead(s.now + 60_000).then((d) => expect(d.appends).toEqual([]));
  });

  it("the user's next message resumes a stopped agent and starts a turn", () => {
    const s = new TestStream();
    const events = [s.created(), s.user("hi"), s.requested()];
    events.push(...stopBatch().map((input) => s.commit(input)));
    events.push(s.event("agent/llm-request-settled", { requestOffset: 3, result: { status: "cancelled", reason: "interrupted-by-user-input" } }));
    const next = s.wait(1000).user("a shorter one, please");
    given(...events, next).atHead(s.now).then((d) => {
      expect(d.appends.flat().map((e) => e.type)).toEqual(["agent/resumed"]);
    });
  });
});

describe("Pause and Resume", () => {
  it("a pause holds the agent's own follow-up turn; Resume releases it", () => {
    const s = new TestStream();
    const history = [s.created(), s.user("hi"), s.requested()];
    history.push(s.event("agent/llm-request-settled", { requestOffset: 3, result: { status: "succeeded", text: "ok" } }));
    history.push(s.context({ role: "developer", content: "script result" }));
    const paused = given(...history, ...pauseBatch().map((input) => s.commit(input)));
    expect(paused.state.paused?.reason).toBe("paused by the user");
    paused.atHead(s.now + 60_000).then((d) => expect(d.appends).toEqual([]));
    const resume = resumeBatch().map((input) => s.commit(input));
    const resumed = given(...history, ...pauseBatch().map((input) => s.commit(input)), ...resume);
    expect(resumed.state.paused).toBeNull();
  });
});

describe("chat controls from wire events", () => {
  const wire = (e: object) => JSON.parse(JSON.stringify(e)) as unknown;

  it("Stop applies while a request is open; Resume once paused; a breaker pause made stale by user input does not count", () => {
    const s = new TestStream();
    const fold = initialChatFold(s.streamPath);
    for (const e of [s.created(), s.user("hi"), s.requested()]) foldWireEventInto(fold, wire(e));
    expect(chatControls(fold.view)).toEqual({ requestOpen: true, paused: false });
    for (const e of stopBatch()) foldWireEventInto(fold, wire(s.commit(e)));
    expect(chatControls(fold.view)).toEqual({ requestOpen: true, paused: true });
    foldWireEventInto(fold, wire(s.event("agent/llm-request-settled", { requestOffset: 3, result: { status: "cancelled", reason: "interrupted-by-user-input" } })));
    expect(chatControls(fold.view)).toEqual({ requestOpen: false, paused: true });
    foldWireEventInto(fold, wire(s.commit(resumeBatch()[0]!)));
    expect(chatControls(fold.view).paused).toBe(false);
    const user = s.user("again");
    foldWireEventInto(fold, wire(user));
    foldWireEventInto(fold, wire(s.event("agent/paused", { reason: "autonomous turn limit reached", triggerOffset: user.offset - 1 })));
    expect(chatControls(fold.view).paused).toBe(false);
  });

  it("skips what does not parse", () => {
    const s = new TestStream();
    const fold = initialChatFold(s.streamPath);
    foldWireEventInto(fold, wire(s.created()));
    const before = fold.state;
    foldWireEventInto(fold, { type: "agent/paused", offset: 2 });
    foldWireEventInto(fold, "junk");
    expect(fold.state).toEqual(before);
    expect(fold.view.lastFoldedOffset).toBe(before.lastFoldedOffset);
  });
});
