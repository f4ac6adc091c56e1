// @agentrt/agent-core: the pure core — fold, decide-at-head, consequences, rendering,
// codemode parsing and the project worker's reactions. No IO; the clock is passed in.
export * from "./state.ts";
export * from "./codemode/index.ts";
export * from "./project-worker/index.ts";
