// @agentrt/llm-driver: renders requested turns, streams them from an OpenAI-compatible model
// (or the offline model) onto the live lane, and settles them on the agent's stream.
export * from "./chunk-coalescer.ts";
export * from "./usage.ts";
export * from "./providers.ts";
export * from "./settlement.ts";
export * from "./compaction.ts";
export * from "./errors.ts";
export * from "./model-client.ts";
export * from "./openai-client.ts";
export * from "./offline-client.ts";
export * from "./offline-reply.ts";
export * from "./running-requests.ts";
export * from "./metrics.ts";
export * from "./request-runner.ts";
export * from "./interrupts.ts";
export * from "./driver.ts";
export * from "./config.ts";
export * from "./start.ts";
