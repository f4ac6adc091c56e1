// The built-in project worker's reactions, called with the state BEFORE each event:
//  - birth: on the first `agent/created`, ONE batch that adds the project's AGENTS.md,
//    re-adds `output-formatting` with the tag dialect (it coalesces in place: nothing was
//    sent yet) and configures `interpretResponses: false` with a 250 ms debounce, which
//    releases the held first turn;
//  - the tag-dialect interpreter for replies of the agent's own open request while
//    `interpretResponses` is false (the platform's fenced interpreter is then off).

import { idempotencyKeys, type AgentEvent, type EventInput } from "@agentrt/contract";
import { isOwnOpenReply, replyEvents } from "../codemode/interpret.ts";
import { parseTagReply } from "../codemode/tag.ts";
import type { ReactionState } from "../state.ts";
import { AGENTS_MD_KEY, DEFAULT_AGENTS_MD, OUTPUT_FORMATTING_KEY, TAG_DIALECT_OUTPUT_FORMATTING } from "./texts.ts";

export interface ProjectWorkerTexts {
  readonly agentsMd?: string;
  readonly outputFormatting?: string;
}

export const WORKER_DEBOUNCE_MS = 250;

export function birthReaction(createdOffset: number, project: ProjectWorkerTexts = {}): EventInput[] {
  const key = (part: string) => idempotencyKeys.workerBirth(createdOffset, part);
  return [
    {
      type: "agents/context-added",
      payload: { role: "system", key: AGENTS_MD_KEY, content: project.agentsMd ?? DEFAULT_AGENTS_MD },
      idempotencyKey: key("agents-md"),
    },
    {
      type: "agents/context-added",
      payload: { role: "system", key: OUTPUT_FORMATTING_KEY, content: project.outputFormatting ?? TAG_DIALECT_OUTPUT_FORMATTING },
      idempotencyKey: key("output-formatting"),
    },
    {
      type: "agent/configured",
      payload: { config: { interpretResponses: false, llmRequestDebounceMs: WORKER_DEBOUNCE_MS } },
      idempotencyKey: key("configured"),
    },
  ];
}

export function projectWorkerReactions(
  stateBefore: ReactionState,
  event: AgentEvent,
  project?: ProjectWorkerTexts,
): EventInput[][] {
  switch (event.type) {
    case "agent/created":
      return stateBefore.birthCertificate === null ? [birthReaction(event.offset, project)] : [];
    case "agents/context-added": {
      if (stateBefore.config.interpretResponses || !isOwnOpenReply(stateBefore, event)) return [];
      const batch = replyEvents(stateBefore, event, parseTagReply(event.payload.content));
      return batch.length === 0 ? [] : [batch];
    }
    default:
      return [];
  }
}
