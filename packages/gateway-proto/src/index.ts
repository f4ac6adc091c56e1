// @agentrt/gateway-proto: a leaf package holding only the generated gRPC code of
// proto/agentrt/v1 (scripts/gen-proto.sh writes src/generated; a test fails when it is stale).
export * from "./generated/agentrt/v1/gateway.ts";
