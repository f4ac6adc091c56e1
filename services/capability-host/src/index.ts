// @agentrt/capability-host: typechecks and runs codemode scripts in a sandbox against `itx`,
// and routes provider namespaces to capability providers.
export * from "./capability-host.ts";
export * from "./script-runner.ts";
export * from "./settlements.ts";
export * from "./scope.ts";
export * from "./config.ts";
export * from "./typecheck/index.ts";
export * from "./sandbox/index.ts";
export * from "./providers/registry.ts";
export * from "./itx/agent-storage.ts";
export * from "./itx/docs-index.ts";
export * from "./itx/host-calls.ts";
