// The driver's fold-and-render through R (request-folds.ts): kept per stream, the next request folds and renders
// only the events after the last one, and the messages stay byte-identical to a fold and
// render from scratch (what a successor driver with nothing kept sends).

import type { AgentEvent, EventInput } from "@agentrt/contract";
import { MemoryEventStore } from "@agentrt/streams";
import { describe, expect, it } from "vitest";
import { renderRequestAt, requestStatus } from "@agentrt/agent-core";
import { RequestFolds } from "../src/request-folds.ts";
import { successBatch } from "../src/settlement.ts";
import { DEFAULT_CONTEXT_WINDOWS } from "../src/usage.ts";
import { birthEvents, requested, userMessage } from "./driver-harness.ts";

const path = "/agents/test/folds";
/** Requests here expire after now (driver-harness), so each is open or settled. */
const NOW = Date.now();
const other = "/agents/test/other";

/** A stream of `turns` answered turns (a section updated now and then) and one open request; returns the request offsets. */
async function conversation(turns: number, path = "/agents/test/folds"): Promise<{ store: MemoryEventStore; requests: number[] }> {
  const store = new MemoryEventStore();
  const requests: number[] = [];
  await store.append(path, birthEvents());
  for (let turn = 1; turn <= turns + 1; turn += 1) {
    if (turn % 3 === 0) await store.append(path, [{ type: "agents/context-added", payload: { role: "system", key: "identity", content: `You are test agent v${turn}.` } }]);
    await store.append(path, [userMessage(`question ${turn}`)]);
    const result = await store.append(path, [requested()]);
    const R = (result.events[0] as AgentEvent).offset;
    requests.push(R);
    if (turn > turns) break;
    const settle: EventInput[] = successBatch({ requestOffset: R, model: "openai/gpt-5.6-terra", text: `answer ${turn}`, durationMs: 5, usage: { inputTokens: 10 * turn, outputTokens: 3 }, rawUsage: undefined, contextWindows: DEFAULT_CONTEXT_WINDOWS });
    await store.append(path, settle);
  }
  return { store, requests };
}

describe("request folds", () => {
  it("render every request byte-identical to a render from scratch, folding only the new events", async () => {
    const { store, requests } = await conversation(7);
    const events = await store.read(path);
    const folds = new RequestFolds(10);
    let previous: AgentEvent[] | undefined;
    for (const R of requests) {
      const upToR = events.filter((e) => e.offset <= R);
      const status = folds.status(path, upToR, R, NOW);
      // A settled request is settled whatever is kept; the last one is open.
      if (R !== requests.at(-1)) expect(folds.status(path, events, R, NOW)).toEqual({ kind: "settled" });
      expect(status.kind).toBe("open");
      if (status.kind !== "open") continue;
      expect(folds.render(path, status.state)).toEqual(renderRequestAt(events, R));
      const items = status.state.contextItems;
      // Folded from the kept state: the items it had are the same objects, not rebuilt ones.
      if (previous !== undefined) expect(items[0]).toBe(previous[0]);
      previous = items as unknown as AgentEvent[];
    }
  });

  it("start from scratch for a request before the kept state, and say why a request is not open", async () => {
    const { store, requests } = await conversation(3);
    const events = await store.read(path);
    const folds = new RequestFolds(10);
    const last = requests.at(-1) as number;
    const open = folds.status(path, events, last, NOW);
    if (open.kind !== "open") throw new Error("the last request should be open");
    folds.render(path, open.state);
    const first = requests[0] as number;
    const before = folds.status(path, events.filter((e) => e.offset <= first), first, NOW);
    expect(before.kind).toBe("open");
    if (before.kind === "open") expect(folds.render(path, before.state)).toEqual(renderRequestAt(events, first));
    expect(folds.status(path, events, first + 1, NOW)).toMatchObject({ kind: "not-open" });
    expect(requestStatus(events, last, { nowMs: NOW, streamPath: path })).toMatchObject({ kind: "open" });
  });

  it("keep at most maxStreams streams", async () => {
    const openState = async (streamPath: string) => {
      const { store, requests } = await conversation(1, streamPath);
      const events = await store.read(streamPath);
      const status = requestStatus(events, requests.at(-1) as number, { nowMs: NOW, streamPath });
      if (status.kind !== "open") throw new Error("open expected");
      return { events, R: requests.at(-1) as number, state: status.state };
    };
    const mine = await openState(path);
    const theirs = await openState(other);
    const folds = new RequestFolds(1);
    folds.render(path, mine.state);
    const kept = folds.status(path, mine.events, mine.R, NOW);
    if (kept.kind !== "open") throw new Error("open expected");
    expect(kept.state.contextItems[0]).toBe(mine.state.contextItems[0]);
    folds.render(other, theirs.state);
    const again = folds.status(path, mine.events, mine.R, NOW);
    if (again.kind !== "open") throw new Error("open expected");
    // Dropped: folded from scratch, so an equal state made of new objects.
    expect(again.state.contextItems[0]).not.toBe(mine.state.contextItems[0]);
    expect(again.state.contextItems).toEqual(mine.state.contextItems);
  });
});
