// The reply interpreters and result renderers that react next to the reducer: the platform's
// codemode reactions (fenced dialect, script results) and the built-in project worker (birth
// reaction, tag dialect). Each decides from the state BEFORE the event; they are called here
// so one place lists everything the system appends in reaction to an event. Which of them run
// is the reaction policy's to say.

import type { AgentEvent, EventInput } from "@agentrt/contract";
import { codemodeReactions } from "./codemode/index.ts";
import { projectWorkerReactions } from "./project-worker/index.ts";
import { bornIntoProject, PRODUCTION_REACTION_POLICY, type ReactionPolicy } from "./reaction-policy.ts";
import type { ReactionState } from "./state.ts";

export function interpreterReactions(
  before: ReactionState,
  event: AgentEvent,
  policy: ReactionPolicy = PRODUCTION_REACTION_POLICY,
): EventInput[][] {
  const batches: EventInput[][] = [];
  if (policy.codemode) batches.push(...codemodeReactions(before, event));
  const worker = policy.projectWorker;
  if (worker !== null && (event.type !== "agent/created" || bornIntoProject(event))) {
    batches.push(...projectWorkerReactions(before, event, worker.texts));
  }
  return batches;
}
