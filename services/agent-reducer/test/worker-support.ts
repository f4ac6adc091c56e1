// What the partition-worker tests share: the reducer's effects appending through one store
// client (the work hand-offs and live events are not under test there), and user input that
// schedules no turn, so an agent has nothing pending and can be evicted.

import type { EventInput } from "@agentrt/contract";
import type { EventStore } from "@agentrt/streams";
import type { ReducerEffects } from "../src/effects.ts";

export function effectsOver(through: Pick<EventStore, "append">): ReducerEffects {
  return {
    now: Date.now,
    append: (path, batch) => through.append(path, batch),
    appendAtHead: async (path, batch, expectedLastOffset) => through.append(path, batch, { expectedLastOffset }),
    publishLlmWork: async () => undefined,
    publishScriptWork: async () => undefined,
    interruptDriver: async () => undefined,
    publishRuntime: async () => undefined,
    publishPreviews: async () => undefined,
  };
}

export const note = (i: number): EventInput => ({
  type: "agents/context-added",
  payload: { role: "user", content: `message ${i}`, actor: { type: "user", origin: "web" }, llmRequestPolicy: { behaviour: "dont-trigger-request" } },
});
