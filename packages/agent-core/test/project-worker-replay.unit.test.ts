// Given scenarios 1 and 1b folded by the real fold, when the codemode and project-worker
// reactions run on each event with the state before it, then exactly the fixture's derived
// events appear (and nothing scripts where the fixture says no script).
// The reactions are called directly, not through the reaction policy: the fixture's certificate
// (@5, from the seed) does not name its project, and the production policy gives the worker's
// birth reaction only to agents born into a project (reaction-policy.unit.test.ts; the real
// reducer and the replay are compared in test/e2e/reducer-vs-replay.test.ts).
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { AgentEvent, EventInput } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { codemodeReactions, foldAgentEvent, initialAgentState, projectWorkerReactions } from "../src/index.ts";

const SPEC = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../shared/spec/scenarios");
interface Fixture {
  streamPath: string;
  events: { offset: number; createdAt: string; type: string; payload: unknown }[];
  expect: {
    derived?: { from_offset: number; type: string; payload: Record<string, unknown> }[];
    no_script_for_offsets?: number[];
    worker_reaction_after_offset_20?: { type: string; payload: unknown }[];
  };
}
const load = (name: string) => parse(readFileSync(`${SPEC}/${name}.yaml`, "utf8")) as Fixture;
const birth = load("1-birth");
const script = load("1b-script");

/** Folds the stream; records what the reactions would append after each event. */
function replay(fixtures: Fixture[]): Map<number, EventInput[][]> {
  const reactions = new Map<number, EventInput[][]>();
  let state = initialAgentState(birth.streamPath);
  for (const raw of fixtures.flatMap((f) => f.events)) {
    const event = { streamPath: birth.streamPath, ...raw } as AgentEvent;
    const batches = [...codemodeReactions(state, event), ...projectWorkerReactions(state, event)];
    if (batches.length > 0) reactions.set(event.offset, batches);
    state = foldAgentEvent(state, event);
  }
  return reactions;
}

describe("scenarios 1 and 1b through the real fold", () => {
  const reactions = replay([birth, script]);
  const flat = (offset: number) => (reactions.get(offset) ?? []).flat();

  it("the birth reaction follows @5 as one batch equal to @21–@23", () => {
    expect(reactions.get(5)).toHaveLength(1);
    expect(flat(5).map(({ type, payload }) => ({ type, payload }))).toEqual(birth.expect.worker_reaction_after_offset_20);
  });

  it.each(script.expect.derived ?? [])("derives $type from @$from_offset", (derived) => {
    const match = flat(derived.from_offset).find((e) => e.type === derived.type);
    expect(match?.payload).toMatchObject(derived.payload);
  });

  it("the @33 script request expires ten minutes after the reply", () => {
    const request = flat(33).find((e) => e.type === "capability-host/script-run-requested");
    expect(request?.payload).toEqual({
      code: 'return (await itx.repo.listPulls({ state: "open" })).length;',
      executionId: "agent-output:33",
      expiresAt: "2026-08-24T17:01:14.000Z",
    });
  });

  it.each(script.expect.no_script_for_offsets ?? [])("no script for @%d", (offset) => {
    expect(flat(offset).length).toBeGreaterThan(0); // the reply was interpreted …
    expect(flat(offset).some((e) => e.type === "capability-host/script-run-requested")).toBe(false); // … and ran nothing
  });

  it("nothing else reacts", () => {
    expect([...reactions.keys()].sort((a, b) => a - b)).toEqual([5, 28, 33, 36, 39]);
  });
});
