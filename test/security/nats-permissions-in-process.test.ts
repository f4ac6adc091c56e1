// NATS least privilege when the reducer runs its llm-driver in its own process
// (REDUCER_LLM_DRIVER=in-process): the driver inside connects as the driver's user
// (LLM_DRIVER_NATS_USER), not the reducer's, so each half keeps exactly its own grants. A turn
// handed to it directly, one that waits in the work queue while it is busy, and an interrupt
// (the reducer asks over core NATS, the driver in the same process answers) all run with not one
// permissions violation in the server's log, and no llm-driver process exists.

import { jetstreamManager } from "@nats-io/jetstream";
import { workStreamName } from "@agentrt/service-kit";
import { waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBareAgent, say } from "../support/turns.ts";
import { startNatsUsersSystem, type NatsUsersSystem } from "./support/nats-users-system.ts";

const PATH = "/agents/perm/in-process";
let system: NatsUsersSystem;
beforeAll(async () => {
  system = await startNatsUsersSystem({
    inProcessDriver: true,
    model: {
      replies: [
        { text: "A first answer.", tokensPerSecond: 2000 },
        // Slow enough to be interrupted mid-stream.
        { text: "This reply is long and slow and will be interrupted by the user before it ends. ".repeat(20), tokensPerSecond: 20 },
      ],
      defaultReply: { text: "Fine, stopping there." },
    },
  });
});
afterAll(async () => system?.stop());

const stream = () => system.store.read(PATH);

describe("a reducer running its driver in its own process, each half as its own NATS user", () => {
  it("answers, is interrupted and answers again with no permissions violation", { timeout: 180_000 }, async () => {
    expect(system.processes.byService("llm-driver")).toEqual([]);
    const jsm = await jetstreamManager(system.nc);
    const queuedBefore = (await jsm.streams.info(workStreamName("llm"))).state.last_seq;
    await createBareAgent(system.store, PATH, 0);
    await say(system.store, PATH, "hello");
    await waitFor(async () => (await stream()).some((e) => e.type === "agents/context-added" && e.payload.role === "assistant" && e.payload.content === "A first answer."), {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    // Handed over in the process: no work item.
    expect((await jsm.streams.info(workStreamName("llm"))).state.last_seq).toBe(queuedBefore);

    const before = (await stream()).length;
    await say(system.store, PATH, "Tell me a long story.");
    await system.model.waitForRequests(2, 60_000);
    await new Promise((r) => setTimeout(r, 1_000)); // let some of the slow reply stream first
    await system.store.append(PATH, [
      { type: "agents/context-added", payload: { role: "user", content: "Stop, that's enough.", actor: { type: "user", origin: "web" }, llmRequestPolicy: { behaviour: "interrupt-current-request" } } },
    ]);
    await waitFor(
      async () =>
        (await system.store.read(PATH, { fromOffset: before })).some(
          (e) => e.type === "agent/llm-request-settled" && e.payload.result.status === "cancelled" && e.payload.result.reason === "interrupted-by-user-input",
        ),
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    await waitFor(async () => (await stream()).some((e) => e.type === "agents/context-added" && e.payload.role === "assistant" && e.payload.content === "Fine, stopping there."), {
      timeoutMs: 60_000,
      intervalMs: 100,
    });

    expect(system.violations()).toEqual([]);
    for (const proc of system.processes.all) expect(proc.running, `${proc.name}:\n${proc.logs().slice(-2000)}`).toBe(true);
    const authErrors = system.processes.all.flatMap((p) => p.logs().split("\n").filter((l) => /permission|authorization/i.test(l)).map((l) => `${p.name}: ${l}`));
    expect(authErrors).toEqual([]);
  });
});
