// The smallest whole-system turn: one reducer, one driver, the fake model, a bare agent.
import { afterAll, beforeAll, expect, it } from "vitest";
import { type System, startSystem } from "../support/system.ts";
import { createBareAgent, lastUserContent, say, waitForAssistant } from "../support/turns.ts";

let system: System;
beforeAll(async () => {
  system = await startSystem({ reducers: 1, drivers: 1, model: { defaultReply: (r) => ({ text: `answer to ${lastUserContent(r.body)}` }) } });
});
afterAll(async () => system?.stop());

it("a bare agent answers a message through reducer, driver and model processes", async () => {
  const path = "/agents/smoke/one";
  await createBareAgent(system.store, path);
  await say(system.store, path, "ping");
  const reply = await waitForAssistant(system.store, path, "answer to ping", 30_000).catch((error: unknown) => {
    process.stdout.write(system.processes.logs() + "\n");
    throw error;
  });
  expect(reply.payload).toMatchObject({ role: "assistant", content: "answer to ping" });
});
