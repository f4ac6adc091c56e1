// A typecheck worker thread: one warm TypeScript LanguageService (ScriptChecker), one script
// at a time. TypeScript polls its cancellation token only at some declarations, so a script of
// pathological types can hold this thread for minutes; the host terminates it at the budget and
// starts another. The first check pays for loading and binding the lib files, before `ready`.

import { parentPort, workerData } from "node:worker_threads";
import { compileScript, ScriptCompileError } from "../sandbox/compile.ts";
import type { CheckedScript, CheckerWorkerData, FromChecker, ToChecker } from "./checker-protocol.ts";
import { ScriptChecker } from "./script-checker.ts";
import { buildScriptSource } from "./script-source.ts";
import { ownThreadStatPath, threadCpuReader } from "./thread-cpu.ts";

const port = parentPort;
if (port === null) throw new Error("checker-worker.ts runs as a worker thread");
const data = workerData as CheckerWorkerData;
const started = performance.now();
// The budgets count this thread's CPU time where it can be read (thread-cpu.ts).
const threadStat = ownThreadStatPath();
const cpuMs = threadCpuReader(threadStat);
const checker = new ScriptChecker(data.itxDeclarations, cpuMs === undefined ? {} : { cpuMs });
if (data.providerDeclarations.length > 0) checker.setProviderDeclarations(new Map(data.providerDeclarations));
checker.check({ preamble: "", resultsPreamble: "const results = [] as const;", code: "return 1;", wrapped: "async (itx) => {\nreturn 1;\n}" }, 600_000);

const post = (message: FromChecker): void => port.postMessage(message);

port.on("message", (message: ToChecker) => {
  if (message.kind === "providers") {
    checker.setProviderDeclarations(new Map(message.declarations));
    return;
  }
  const outcome = checker.check(message.parts, message.budgetMs);
  let result: CheckedScript = outcome;
  if (message.compile && (outcome.kind === "ok" || outcome.kind === "unchecked")) {
    try {
      result = { ...outcome, compiled: { ok: true, javascript: compileScript(buildScriptSource(message.parts)) } };
    } catch (error) {
      if (!(error instanceof ScriptCompileError)) throw error;
      result = { ...outcome, compiled: { ok: false, error: error.message } };
    }
  }
  post({ kind: "checked", id: message.id, result });
});

post({ kind: "ready", warmMs: performance.now() - started, ...(cpuMs === undefined || threadStat === undefined ? {} : { threadStat }) });
