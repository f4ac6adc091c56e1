// The fake OpenAI-compatible model server for tests and benchmarks.
export { startFakeModel } from "./server.ts";
export { monotonicMs, splitTokens } from "./pacing.ts";
export type * from "./types.ts";
