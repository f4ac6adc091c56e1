export * from "./quickjs-sandbox.ts";
export * from "./compile.ts";
export * from "./bootstrap.ts";
export * from "./worker-sandbox.ts";
