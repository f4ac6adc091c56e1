// @agentrt/testing: what tests across the workspace share — the NATS harness (a real
// nats-server per test file), the shared event-store suite, and (added by its owner) the fake
// OpenAI-compatible model server.
export * from "./nats/index.ts";
export * from "./fake-model/index.ts";
