// @agentrt/agent-core: the pure core — fold, decide-at-head, consequences, rendering,
// codemode parsing and the project worker's reactions. No IO; the clock is passed in.
export * from "./state.ts";
export { initialAgentState, foldAgentEvent, foldAgentEvents } from "./fold/fold.ts";
export { triggerSourceOf, isInterruptingItem } from "./fold/triggers.ts";
export { isAgentExecution } from "./fold/bookkeeping.ts";
export * from "./decide.ts";
export * from "./react.ts";
export * from "./runtime.ts";
export * from "./codemode/index.ts";
export * from "./project-worker/index.ts";
