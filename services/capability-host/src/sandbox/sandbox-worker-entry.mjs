// Entry of a sandbox worker thread, in JavaScript: the services run TypeScript through tsx,
// and a worker thread does not get the loader its parent registered with `--import tsx`, so it
// registers tsx itself before importing the TypeScript worker.
import { register } from "tsx/esm/api";

register();
await import("./sandbox-worker.ts");
