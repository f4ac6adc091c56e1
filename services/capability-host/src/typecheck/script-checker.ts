// A warm TypeScript LanguageService over a virtual file system: lib files are read from the
// installed compiler once and kept; itx.d.ts and provider declarations change rarely; only
// the script file changes per check, so each check re-parses one file and re-checks it.
// A check has a time budget (a cancellation token, which TypeScript polls only at some
// declarations: the host runs this in a worker it terminates at the budget). A crash means
// "unknown" and the caller runs the script unchecked (only provable errors may block); an
// overrun is `timed-out` and the script does not run (see the host's README).

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type ts from "typescript";
import { buildScriptSource, type ScriptSourceParts } from "./script-source.ts";
import { typescript } from "./typescript-compiler.ts";
import { CheckBudget } from "./thread-cpu.ts";
import {
  DID_YOU_MEAN_NAME,
  DID_YOU_MEAN_PROPERTY,
  formatProblem,
  isRootItxAccess,
  isSyntaxCode,
  type Problem,
} from "./provable.ts";

const SCRIPT_FILE = "/virtual/script.ts";
const ITX_FILE = "/virtual/itx.d.ts";
const LIB_DIR = dirname(createRequire(import.meta.url).resolve("typescript/lib/lib.d.ts"));
const LIBS = ["lib.es2023.d.ts"];

export type CheckOutcome =
  | { readonly kind: "ok"; readonly durationMs: number }
  | { readonly kind: "blocked"; readonly problems: readonly string[]; readonly durationMs: number }
  | { readonly kind: "unchecked"; readonly reason: string; readonly durationMs: number }
  /** The checker did not finish within the budget (cancelled, or its worker terminated). */
  | { readonly kind: "timed-out"; readonly budgetMs: number; readonly durationMs: number }
  /** The checker's worker died while checking (e.g. out of memory on pathological types). */
  | { readonly kind: "checker-lost"; readonly reason: string; readonly durationMs: number };

// One object for the service's lifetime: a new one per call would read as changed settings.
let compilerOptionsOnce: ts.CompilerOptions | undefined;
const compilerOptions = (): ts.CompilerOptions =>
  (compilerOptionsOnce ??= {
    target: typescript().ScriptTarget.ES2022,
    module: typescript().ModuleKind.ESNext,
    lib: LIBS,
    strict: true,
    noEmit: true,
    types: [],
    skipLibCheck: true,
    allowJs: false,
  });

interface VirtualFile {
  version: number;
  snapshot: ts.IScriptSnapshot;
}

export class ScriptChecker {
  private readonly files = new Map<string, VirtualFile>();
  private readonly libCache = new Map<string, ts.IScriptSnapshot>();
  private readonly service: ts.LanguageService;
  private deadline = Number.POSITIVE_INFINITY;
  /** The running check's budget, in this thread's CPU time where `cpuMs` reads it (thread-cpu.ts). */
  private budget: CheckBudget | undefined;

  constructor(
    itxDeclarations: string,
    private readonly options: { readonly cpuMs?: () => number | undefined } = {},
  ) {
    this.setFile(ITX_FILE, itxDeclarations);
    this.setFile(SCRIPT_FILE, "");
    const host: ts.LanguageServiceHost = {
      getCompilationSettings: compilerOptions,
      getScriptFileNames: () => [...this.files.keys()],
      getScriptVersion: (name) => String(this.files.get(name)?.version ?? 0),
      getScriptSnapshot: (name) => this.files.get(name)?.snapshot ?? this.libSnapshot(name),
      getCurrentDirectory: () => "/virtual",
      getDefaultLibFileName: (options) => join(LIB_DIR, typescript().getDefaultLibFileName(options)),
      fileExists: (name) => this.files.has(name) || this.libSnapshot(name) !== undefined,
      readFile: (name) => {
        const snap = this.files.get(name)?.snapshot ?? this.libSnapshot(name);
        return snap?.getText(0, snap.getLength());
      },
      getCancellationToken: () => ({ isCancellationRequested: () => this.cancellationRequested() }),
    };
    this.service = typescript().createLanguageService(host, typescript().createDocumentRegistry());
  }

  /** Replaces the declarations of every provider namespace (called when the registry changes). */
  setProviderDeclarations(declarations: ReadonlyMap<string, string>): void {
    for (const name of [...this.files.keys()]) {
      if (name.startsWith("/virtual/providers/") && !declarations.has(providerNamespaceOf(name))) this.files.delete(name);
    }
    for (const [namespace, dts] of declarations) this.setFile(`/virtual/providers/${namespace}.d.ts`, dts);
  }

  /** Type-checks one script; never throws. */
  check(parts: ScriptSourceParts, budgetMs: number): CheckOutcome {
    const started = performance.now();
    const elapsed = (): number => performance.now() - started;
    const source = buildScriptSource(parts);
    this.setFile(SCRIPT_FILE, source.text);
    this.deadline = started + budgetMs;
    this.budget = new CheckBudget(budgetMs, this.options.cpuMs);
    try {
      const syntactic = this.service.getSyntacticDiagnostics(SCRIPT_FILE);
      const semantic = syntactic.some((d) => d.start !== undefined && d.start >= source.codeStart)
        ? []
        : this.service.getSemanticDiagnostics(SCRIPT_FILE);
      const program = this.service.getProgram();
      const sourceFile = program?.getSourceFile(SCRIPT_FILE);
      if (sourceFile === undefined) return { kind: "unchecked", reason: "no program", durationMs: elapsed() };
      const checker = semantic.length > 0 ? program?.getTypeChecker() : undefined;
      const problems: Problem[] = [];
      for (const d of [...syntactic, ...semantic]) {
        if (d.start === undefined || d.start < source.codeStart) continue; // preamble lines never block
        if (!this.isProvable(d, sourceFile, checker)) continue;
        const pos = sourceFile.getLineAndCharacterOfPosition(d.start);
        const codeLineStart = sourceFile.getLineAndCharacterOfPosition(source.codeStart);
        problems.push({
          code: d.code,
          line: pos.line - source.codeStartLine + 1,
          column: pos.line === codeLineStart.line ? pos.character - codeLineStart.character + 1 : pos.character + 1,
          message: typescript().flattenDiagnosticMessageText(d.messageText, "\n"),
        });
      }
      if (problems.length === 0) return { kind: "ok", durationMs: elapsed() };
      return { kind: "blocked", problems: problems.map(formatProblem), durationMs: elapsed() };
    } catch (error) {
      if (error instanceof typescript().OperationCanceledException) return { kind: "timed-out", budgetMs, durationMs: elapsed() };
      return { kind: "unchecked", reason: `checker crashed: ${String(error)}`, durationMs: elapsed() };
    } finally {
      this.deadline = Number.POSITIVE_INFINITY;
      this.budget = undefined;
    }
  }

  /** Past the wall-clock deadline, the CPU this thread used decides (CheckBudget); the clock is read only then. */
  private cancellationRequested(): boolean {
    const now = performance.now();
    if (now <= this.deadline) return false;
    const verdict = this.budget?.verdict();
    if (verdict === undefined || verdict.kind === "stop") return true;
    this.deadline = now + verdict.moreMs;
    return false;
  }

  private isProvable(d: ts.Diagnostic, sourceFile: ts.SourceFile, checker: ts.TypeChecker | undefined): boolean {
    if (isSyntaxCode(d.code)) return true;
    if (d.code === DID_YOU_MEAN_NAME) return true;
    if (d.code === DID_YOU_MEAN_PROPERTY) return d.start !== undefined && !isRootItxAccess(sourceFile, checker, d.start);
    return false;
  }

  private setFile(name: string, text: string): void {
    const previous = this.files.get(name);
    this.files.set(name, { version: (previous?.version ?? 0) + 1, snapshot: typescript().ScriptSnapshot.fromString(text) });
  }

  private libSnapshot(name: string): ts.IScriptSnapshot | undefined {
    if (!name.startsWith(LIB_DIR)) return undefined;
    const cached = this.libCache.get(name);
    if (cached !== undefined) return cached;
    let text: string;
    try {
      text = readFileSync(name, "utf8");
    } catch {
      return undefined;
    }
    const snapshot = typescript().ScriptSnapshot.fromString(text);
    this.libCache.set(name, snapshot);
    return snapshot;
  }
}

function providerNamespaceOf(fileName: string): string {
  return fileName.slice("/virtual/providers/".length, -".d.ts".length);
}
