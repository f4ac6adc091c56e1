export * from "./script-checker.ts";
export * from "./script-source.ts";
export * from "./provable.ts";
export * from "./itx-declarations.ts";
