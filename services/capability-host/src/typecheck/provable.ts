// Which diagnostics PROVE a script is wrong (codemode.md "Typecheck"): syntax errors (TS1xxx),
// "Cannot find name … Did you mean" (TS2552) and "Property … Did you mean" (TS2551) — except
// a property of the root `itx`, because providers extend the root at run time. Everything
// less certain (unknown names without a suggestion, arity, assignability) runs unchecked.

import type ts from "typescript";
import { typescript } from "./typescript-compiler.ts";

export const DID_YOU_MEAN_NAME = 2552;
export const DID_YOU_MEAN_PROPERTY = 2551;

export function isSyntaxCode(code: number): boolean {
  return code >= 1000 && code < 2000;
}

/** True when the property access at `start` reads a member of the root `itx` object. */
export function isRootItxAccess(sourceFile: ts.SourceFile, checker: ts.TypeChecker | undefined, start: number): boolean {
  const access = findPropertyAccess(sourceFile, start);
  if (access === undefined) return false;
  const target = access.expression;
  if (typescript().isIdentifier(target) && target.text === "itx") return true;
  const symbol = checker?.getTypeAtLocation(target).getSymbol();
  return symbol?.getName() === "Itx";
}

function findPropertyAccess(sourceFile: ts.SourceFile, start: number): ts.PropertyAccessExpression | undefined {
  const { forEachChild, isPropertyAccessExpression } = typescript();
  let found: ts.PropertyAccessExpression | undefined;
  const visit = (node: ts.Node): void => {
    if (start < node.getStart(sourceFile) || start >= node.getEnd()) return;
    if (isPropertyAccessExpression(node) && node.name.getStart(sourceFile) === start) found = node;
    forEachChild(node, visit);
  };
  visit(sourceFile);
  return found;
}

export interface Problem {
  readonly code: number;
  /** 1-based line and column inside the agent's own code. */
  readonly line: number;
  readonly column: number;
  readonly message: string;
}

export function formatProblem(problem: Problem): string {
  return `Line ${problem.line}, column ${problem.column}: error TS${problem.code}: ${problem.message}`;
}
