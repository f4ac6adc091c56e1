// @agentrt/agent-core: the pure core — fold, decide-at-head, consequences, rendering,
// codemode parsing and the project worker's reactions. No IO; the clock is passed in.
export * from "./state.ts";
export { initialAgentState, foldAgentEvent, foldAgentEvents, StepwiseFold } from "./fold/fold.ts";
export { triggerSourceOf, isInterruptingItem } from "./fold/triggers.ts";
export { keptByCompaction } from "./fold/context-items.ts";
export { isAgentExecution } from "./fold/bookkeeping.ts";
export * from "./decide.ts";
export * from "./redrive.ts";
export * from "./react.ts";
export * from "./runtime.ts";
export { PROTOCOL_PROMPT } from "./render/protocol-prompt.ts";
export {
  type ChatMessage,
  type ChatRole,
  formatActor,
  formatRef,
  metadataLine,
  renderedRole,
} from "./render/items.ts";
export {
  type RenderOptions,
  RequestNotRenderableError,
  renderRequest,
  renderRequestAt,
  standingDocumentLength,
} from "./render/render.ts";
export { IncrementalRequestRenderer, StreamRequestRenderer } from "./render/incremental.ts";
export { interpreterReactions } from "./interpreters.ts";
export * from "./reaction-policy.ts";
export * from "./request-status.ts";
export * from "./replay.ts";
export * from "./codemode/index.ts";
export * from "./display/index.ts";
export { firstUnbornInput, isAgentMessage, isUserInput, needsAgent, noAgentMessage } from "./birth-rule.ts";
export * from "./project-worker/index.ts";
export * from "./audit/audit.ts";
