export * from "./script-checker.ts";
export * from "./script-source.ts";
export * from "./provable.ts";
export * from "./itx-declarations.ts";
export * from "./checker-protocol.ts";
export * from "./worker-checker.ts";
export * from "./in-thread-checker.ts";
