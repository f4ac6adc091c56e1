// @agentrt/web-gateway: the public API of the agent runtime (HTTP/JSON, SSE, WebSocket, gRPC,
// auth, the web UI). Run it with `src/main.ts`; these exports are for tests, benches and
// embedding the gateway in another process.
export { createHttpGateway, type GatewayOptions, type HttpGateway } from "./gateway.ts";
export { GatewayApi } from "./api/gateway-api.ts";
export type { AgentCorePort, AgentView, BirthInput, RenderedMessage } from "./api/agent-core-port.ts";
export { gatewayCore, DEFAULT_PROMPT_FILE } from "./core.ts";
export { Authenticator, assertDevModeBindable, DEV_PRINCIPAL, type Principal } from "./auth/authenticator.ts";
export { mintApiKey, verifyApiKey, keysFileSchema, type StoredKey, type Scope, type Verb } from "./auth/keys.ts";
export { createGrpcServer, bindGrpc } from "./grpc/server.ts";
export { buildOpenApi } from "./api/openapi.ts";
export { ERROR_STATUS, classifyError, GatewayError, type GatewayErrorCode } from "./errors.ts";
