// The checker on the host's own thread: what the host did before checks moved to worker
// threads. Kept only so the host benchmark can compare both in the same run; a check here
// blocks the thread until TypeScript polls its cancellation token (possibly minutes).

import { compileScript, ScriptCompileError } from "../sandbox/compile.ts";
import type { CheckedScript } from "./checker-protocol.ts";
import { ScriptChecker } from "./script-checker.ts";
import { buildScriptSource, type ScriptSourceParts } from "./script-source.ts";
import type { ScriptCheckService } from "./worker-checker.ts";

export class InThreadChecker implements ScriptCheckService {
  private readonly checker: ScriptChecker;

  constructor(itxDeclarations: string) {
    this.checker = new ScriptChecker(itxDeclarations);
    this.checker.check({ preamble: "", resultsPreamble: "const results = [] as const;", code: "return 1;", wrapped: "async (itx) => {\nreturn 1;\n}" }, 600_000);
  }

  async check(parts: ScriptSourceParts, budgetMs: number, options: { compile?: boolean } = {}): Promise<CheckedScript> {
    const outcome = this.checker.check(parts, budgetMs);
    if (!options.compile || (outcome.kind !== "ok" && outcome.kind !== "unchecked")) return outcome;
    try {
      return { ...outcome, compiled: { ok: true, javascript: compileScript(buildScriptSource(parts)) } };
    } catch (error) {
      if (!(error instanceof ScriptCompileError)) throw error;
      return { ...outcome, compiled: { ok: false, error: error.message } };
    }
  }

  setProviderDeclarations(declarations: ReadonlyMap<string, string>): void {
    this.checker.setProviderDeclarations(declarations);
  }

  async close(): Promise<void> {
    // Nothing to release.
  }
}
