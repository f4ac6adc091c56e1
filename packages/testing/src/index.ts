// @agentrt/testing: what tests across the workspace share — the NATS harness (a real
// nats-server, or a 3-node cluster, per test file), the fake OpenAI-compatible model server, and
// reading live subscriptions.
export * from "./nats/index.ts";
export * from "./collect.ts";
export * from "./prng.ts";
export * from "./fake-model/index.ts";
export * from "./events.ts";
