// What the chat's Stop, Pause and Resume controls append (the web UI and the CLI send exactly
// these batches through the ordinary append API; no special endpoint exists for them).
//
// Stop is ONE atomic batch: a developer note asking to interrupt the open request, then a
// pause. The note has no actor, so it is an agent-loop trigger (contract.md "What triggers a
// turn"); the pause right behind it clears an agent-loop trigger, so the reducer interrupts the
// running reply (settled `cancelled`, partial text kept as history) and starts NO new turn.
// The agent stays paused until Resume or the user's next message (external input resumes it).

import type { EventInput } from "@agentrt/contract";

export const STOP_NOTE = "[The user pressed Stop: the reply in progress was interrupted and the agent paused.]";
export const STOPPED_REASON = "stopped by the user";
export const PAUSED_REASON = "paused by the user";
export const RESUMED_REASON = "resumed by the user";

export function stopBatch(): EventInput[] {
  return [
    {
      type: "agents/context-added",
      payload: { role: "developer", content: STOP_NOTE, llmRequestPolicy: { behaviour: "interrupt-current-request" } },
    },
    { type: "agent/paused", payload: { reason: STOPPED_REASON } },
  ];
}

export function pauseBatch(): EventInput[] {
  return [{ type: "agent/paused", payload: { reason: PAUSED_REASON } }];
}

export function resumeBatch(): EventInput[] {
  return [{ type: "agent/resumed", payload: { reason: RESUMED_REASON } }];
}
