// The reply interpreters and result renderers that react next to the reducer: the platform's
// codemode reactions (fenced dialect, script results) and the built-in project worker (birth
// reaction, tag dialect). Each decides from the state BEFORE the event; they are called here
// so one place lists everything the system appends in reaction to an event.

import type { AgentEvent, EventInput } from "@agentrt/contract";
import { codemodeReactions } from "./codemode/index.ts";
import { type ProjectWorkerTexts, projectWorkerReactions } from "./project-worker/index.ts";
import type { AgentState } from "./state.ts";

export interface InterpreterOptions {
  /** Fenced-dialect interpreter and script-result rendering (default on). */
  readonly codemode?: boolean;
  /** The built-in project worker; pass its texts to override the defaults (default on). */
  readonly projectWorker?: boolean | ProjectWorkerTexts;
}

export function interpreterReactions(
  before: AgentState,
  event: AgentEvent,
  options: InterpreterOptions = {},
): EventInput[][] {
  const batches: EventInput[][] = [];
  if (options.codemode !== false) batches.push(...codemodeReactions(before, event));
  const worker = options.projectWorker ?? true;
  if (worker !== false) {
    batches.push(...(worker === true ? projectWorkerReactions(before, event) : projectWorkerReactions(before, event, worker)));
  }
  return batches;
}
