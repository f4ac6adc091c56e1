// @agentrt/testing: what tests across the workspace share — the NATS harness (a real
// nats-server, or a 3-node cluster, per test file), the fake OpenAI-compatible model server,
// reading live subscriptions, the gateway's live followers (SSE/WebSocket) and the test logger.
export * from "./nats/index.ts";
export * from "./collect.ts";
export * from "./prng.ts";
export * from "./fake-model/index.ts";
export * from "./events.ts";
export * from "./live/index.ts";
export * from "./logger.ts";
export { registerChild, scratchDir, unregisterChild } from "./process-registry.ts";
