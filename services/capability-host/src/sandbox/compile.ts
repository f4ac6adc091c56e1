// TypeScript → JavaScript for the sandbox: type erasure only (transpileModule, no checking),
// then the call that runs the wrapped script against `itx` and stringifies its result.

import { typescript } from "../typecheck/typescript-compiler.ts";
import { SCRIPT_BINDING, type ScriptSource } from "../typecheck/script-source.ts";

export class ScriptCompileError extends Error {
  override readonly name = "ScriptCompileError";
}

export function compileScript(source: ScriptSource): string {
  const ts = typescript();
  const output = ts.transpileModule(source.text, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, sourceMap: false, removeComments: false },
    reportDiagnostics: true,
    fileName: "script.ts",
  });
  const syntax = output.diagnostics?.find((d) => d.category === ts.DiagnosticCategory.Error);
  if (syntax !== undefined) throw new ScriptCompileError(ts.flattenDiagnosticMessageText(syntax.messageText, "\n"));
  return `${output.outputText}\n__finish(${SCRIPT_BINDING}(itx));\n`;
}
