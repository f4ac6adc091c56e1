// The reducer and `agents replay` run the same reaction policy: a bare agent, an agent born
// into a project and a stream that was never born are each fed to the REAL reducer (its own
// process, started from main.ts with the deployment defaults, on a real nats-server), then
// the stream it produced is replayed through the pure core. What the reducer appended in
// reaction must be exactly what the replay says the system appends, event for event, key for
// key; and what it appended at the head (the debounced request) must be what `decideAt` (the
// replay's `--decide`) says the head decision appends at that offset and time.
//
// Completion without sleeps: the reducer handles a stream's events in order and appends their
// reactions in order, so once the transcription of a stream error appended after the inputs
// is on the stream, every reaction queued before it is too. Two such rounds cover reactions
// to the reducer's own appends (the worker's birth batch is folded before the second marker).

import type { AgentEvent, EventInput } from "@agentrt/contract";
import { idempotencyKeys } from "@agentrt/contract";
import { decideAt, replayScenario } from "@agentrt/agent-core";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type System, startSystem } from "../support/system.ts";

let system: System;
beforeAll(async () => {
  system = await startSystem({ reducers: 1, drivers: 0, hosts: 0, gateway: false, repoProvider: false });
});
afterAll(async () => system?.stop());

/** Inputs that exercise every per-event reaction, then one message that schedules a turn. */
function inputsAfterBirth(): EventInput[][] {
  return [...reactionInputs(), [{ type: "agents/context-added", payload: { role: "user", content: "what's up?", actor: { type: "user", origin: "web" } } }]];
}

/** Inputs that exercise every per-event reaction without scheduling a turn. */
function reactionInputs(): EventInput[][] {
  return [
    [{ type: "agents/context-added", payload: { role: "user", content: "note to self", actor: { type: "user", origin: "web" }, llmRequestPolicy: { behaviour: "dont-trigger-request" } } }],
    [{ type: "agents/web-message-sent", payload: { message: "Deploy finished." } }],
    [{ type: "capability-host/preamble-set", payload: { key: "helpers", code: "const two = 2;" } }],
    [{ type: "capability-host/preamble-removed", payload: { key: "helpers" } }],
    [{ type: "stream/error-occurred", payload: { message: "a provider hiccup" } }],
  ];
}

interface Run {
  readonly events: AgentEvent[];
  /** Offsets the test itself wrote; everything else on the stream is the reducer's. */
  readonly written: ReadonlySet<number>;
}

async function write(path: string, batch: EventInput[], written: Set<number>): Promise<number> {
  const result = await system.store.append(path, batch);
  if (result.status !== "committed") throw new Error(`append to ${path}: ${result.status}`);
  for (const e of result.events) written.add(e.offset);
  return result.events.at(-1)!.offset;
}

/** Appends a stream error and waits until the reducer transcribed it (it reacts in order). */
async function marker(path: string, written: Set<number>, round: number): Promise<void> {
  const offset = await write(path, [{ type: "stream/error-occurred", payload: { message: `marker ${round}` } }], written);
  const key = idempotencyKeys.transcribeError(offset);
  await waitFor(async () => (await system.store.read(path, { fromOffset: offset })).some((e) => e.idempotencyKey === key), {
    timeoutMs: 60_000,
    intervalMs: 100,
  });
}

async function runThroughReducer(path: string, created: EventInput): Promise<Run> {
  const written = new Set<number>();
  await write(path, [created], written);
  for (const batch of inputsAfterBirth()) await write(path, batch, written);
  // The turn is the reducer's head decision after the debounce: wait for it, then for the reactions.
  await waitFor(async () => (await system.store.read(path)).some((e) => e.type === "agent/llm-request-requested"), { timeoutMs: 60_000, intervalMs: 100 });
  await marker(path, written, 1);
  await marker(path, written, 2);
  return { events: await system.store.read(path), written };
}

const comparable = (e: { type: string; payload: unknown; idempotencyKey?: string }) => ({ type: e.type, payload: e.payload, idempotencyKey: e.idempotencyKey });

function compare(run: Run) {
  const byReducer = run.events.filter((e) => !run.written.has(e.offset));
  const derived = replayScenario(run.events).derived;
  const reactionKeys = new Set(derived.map((d) => d.idempotencyKey));
  const reactions = byReducer.filter((e) => reactionKeys.has(e.idempotencyKey));
  // Anything else the reducer appended was decided at the head, on the stream as it stood then.
  const decisions = byReducer
    .filter((e) => !reactionKeys.has(e.idempotencyKey))
    .map((e) => ({ appended: comparable(e), decided: decideAt(run.events, e.offset - 1, Date.parse(e.createdAt)).appends.map(comparable) }));
  return { appendedByReducer: reactions.map(comparable), replayed: derived.map(comparable), decisions };
}

describe("the real reducer and the replay append the same events", () => {
  it("for a bare agent: the platform's reactions and no project-worker birth reaction", async () => {
    const run = await runThroughReducer("/agents/compare/bare", { type: "agent/created", payload: {} });
    const { appendedByReducer, replayed, decisions } = compare(run);
    expect(appendedByReducer).toEqual(replayed);
    expect(decisions.map((d) => d.appended.type)).toEqual(["agent/llm-request-requested"]);
    for (const { appended, decided } of decisions) expect(decided).toContainEqual(appended);
    // Not vacuous: the mirror, both preamble notes and three error transcriptions, and no worker birth.
    expect(appendedByReducer.map((e) => e.type)).toEqual(Array(6).fill("agents/context-added"));
    expect(appendedByReducer.some((e) => e.type === "agent/configured")).toBe(false);
  });

  it("for an agent born into a project: the worker's birth batch as well", async () => {
    const run = await runThroughReducer("/agents/compare/project", { type: "agent/created", payload: { project: { name: "Demo", slug: "demo" } } });
    const { appendedByReducer, replayed, decisions } = compare(run);
    expect(appendedByReducer).toEqual(replayed);
    expect(decisions.map((d) => d.appended.type)).toEqual(["agent/llm-request-requested"]);
    for (const { appended, decided } of decisions) expect(decided).toContainEqual(appended);
    expect(appendedByReducer.slice(0, 3).map((e) => e.type)).toEqual(["agents/context-added", "agents/context-added", "agent/configured"]);
    expect(appendedByReducer[2]?.payload).toEqual({ config: { interpretResponses: false, llmRequestDebounceMs: 250 } });
    expect(appendedByReducer).toHaveLength(9);
  });

  it("for a stream that was never born: nothing, on either side", async () => {
    // A stream in the bare agent's partition, written before that agent's markers: the
    // reducer has folded it (the feed is in partition order) by the time the markers return.
    const bare = "/agents/compare/bare-2";
    const partition = system.store.partitionOf(bare);
    let unborn = "";
    for (let i = 0; unborn === ""; i += 1) if (system.store.partitionOf(`/agents/compare/unborn-${i}`) === partition) unborn = `/agents/compare/unborn-${i}`;
    const written = new Set<number>();
    for (const batch of inputsAfterBirth()) await write(unborn, batch, written);
    await runThroughReducer(bare, { type: "agent/created", payload: {} });
    const events = await system.store.read(unborn);
    const { appendedByReducer, replayed, decisions } = compare({ events, written });
    expect(appendedByReducer).toEqual([]);
    expect(decisions).toEqual([]);
    expect(replayed).toEqual([]);
    expect(events).toHaveLength(inputsAfterBirth().length);
  });
});
