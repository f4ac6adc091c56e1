// Messages between the capability host and a typecheck worker thread. The worker holds one
// warm ScriptChecker; the host posts `check` (one at a time per worker) and `providers` when
// the live providers' declarations change. A check that compiles also returns the script's
// JavaScript, so the host's own thread never loads the TypeScript compiler.

import type { CheckOutcome } from "./script-checker.ts";
import type { ScriptSourceParts } from "./script-source.ts";

export interface CheckerWorkerData {
  readonly itxDeclarations: string;
  readonly providerDeclarations: ReadonlyArray<readonly [string, string]>;
}

/** The script's JavaScript for the sandbox, or why it could not be compiled (a syntax error). */
export type Compiled = { readonly ok: true; readonly javascript: string } | { readonly ok: false; readonly error: string };

/** A check, plus the compiled script when it may run (ok or unchecked) and compiling was asked. */
export type CheckedScript = CheckOutcome & { readonly compiled?: Compiled };

export type ToChecker =
  | { readonly kind: "check"; readonly id: number; readonly parts: ScriptSourceParts; readonly budgetMs: number; readonly compile: boolean }
  | { readonly kind: "providers"; readonly declarations: ReadonlyArray<readonly [string, string]> };

export type FromChecker =
  /** `threadStat`: the worker thread's /proc stat file, whose CPU time its checks' budgets count (absent off Linux). */
  | { readonly kind: "ready"; readonly warmMs: number; readonly threadStat?: string }
  | { readonly kind: "checked"; readonly id: number; readonly result: CheckedScript };
