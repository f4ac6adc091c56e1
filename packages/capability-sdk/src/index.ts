// @agentrt/capability-sdk: write a capability provider — a separate process that adds
// `itx.<namespace>` to every script, with types the host's checker sees.
export * from "./backoff.ts";
export * from "./protocol.ts";
export * from "./provider.ts";
