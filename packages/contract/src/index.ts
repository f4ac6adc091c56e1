// @agentrt/contract: the event contract 7.0.0 as code — schemas, types, ownership, config.
export * from "./errors.ts";
export * from "./stream-path.ts";
export * from "./config.ts";
export * from "./payloads.ts";
export * from "./events.ts";
export * from "./validate.ts";
export * from "./ownership.ts";
export * from "./grant.ts";
export * from "./idempotency-keys.ts";
export * from "./api-appends.ts";
export * from "./service-emits.ts";
export * from "./json-schema.ts";
export * from "./json-depth.ts";
export * from "./well-formed.ts";
export * from "./unknown-outcome.ts";
