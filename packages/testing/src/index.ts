// @agentrt/testing: what tests across the workspace share — the NATS harness (a real
// nats-server, or a 3-node cluster, per test file) and the fake OpenAI-compatible model server.
export * from "./nats/index.ts";
export * from "./fake-model/index.ts";
