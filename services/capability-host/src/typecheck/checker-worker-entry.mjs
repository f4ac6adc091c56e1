// Entry of a typecheck worker thread, in JavaScript. From a compiled build the worker's
// JavaScript sits next to this file; from the sources (tsx) a worker thread does not get the
// loader its parent registered with `--import tsx`, so it registers tsx itself first.
import { existsSync } from "node:fs";
import { URL } from "node:url";

const compiled = new URL("./checker-worker.js", import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("./checker-worker.ts");
}
