// A turn whose stream holds an event this driver cannot read (a newer writer's type: what a
// rolling upgrade, or a rollback, leaves on a stream) before its request: the driver reads past
// it and answers. Its reads had stopped at that event, so the request was "not yet visible"
// every 2.5 s until the item was dropped and the request expired, on every later turn too
// (red-team).

import type { AgentEvent } from "@agentrt/contract";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { append, birthEvents, type DriverEnv, publishLlmWork, requested, startDriverEnv, userMessage, waitForEvent } from "./driver-harness.ts";

let env: DriverEnv;
beforeAll(async () => {
  env = await startDriverEnv();
});
afterAll(async () => {
  await env?.close();
});

/** Stores a record at `first` as a newer writer would, with an event of a type this version does not know. */
async function newerWritersRecord(path: string, first: number): Promise<void> {
  const body = { v: 1, first, n: 1, at: new Date().toISOString(), path, events: [{ type: "agent/teleported", payload: { to: "mars" } }] };
  await jetstream(env.nc).publish(env.store.subjectOf(path), new TextEncoder().encode(JSON.stringify(body)), { msgID: `${env.store.subjectOf(path)}@${first}` });
}

describe("llm-driver: a stream with a newer writer's event", () => {
  for (const cached of [true, false]) {
    it(`given an unreadable event before the user's message, when the request is driven${cached ? " (stream cache on the feed)" : " (reads from the store)"}, then it is answered`, async () => {
      const path = `/agents/newer/${cached ? "cached" : "direct"}`;
      // One driver at a time: each case's item goes to the driver of its kind
      const driver = await env.startDriver({ streamCache: cached });
      const born = await append(env.store, path, [...birthEvents()]);
      await newerWritersRecord(path, (born.at(-1) as AgentEvent).offset + 1);
      env.model.script({ text: "answered past it" });
      await append(env.store, path, [userMessage("are you there?")]);
      const [request] = await append(env.store, path, [requested()]);
      const R = (request as AgentEvent).offset;
      await publishLlmWork(env, path, R);
      const settled = await waitForEvent(env.store, path, "agent/llm-request-settled", (e) => e.payload.requestOffset === R, 10_000);
      expect(settled.payload.result).toMatchObject({ status: "succeeded", text: "answered past it" });
      // The model saw the user's message (the unreadable event is not in its context)
      expect(JSON.stringify(env.model.requests.at(-1)?.body)).toContain("are you there?");
      await driver.stop();
    });
  }
});
