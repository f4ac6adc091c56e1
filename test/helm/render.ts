// Runs helm (through scripts/helm.sh, which unpacks the binary from a devDependency) and parses
// what it renders.

import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import YAML from "yaml";
import type { Manifest } from "./k8s-schema.ts";

const run = promisify(execFile);
export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
export const chartDir = `${repoRoot}deploy/helm/agentrt`;

export class HelmError extends Error {
  readonly code = "helm_failed";
  constructor(
    args: readonly string[],
    readonly stderr: string,
  ) {
    super(`helm ${args.join(" ")} failed: ${stderr.trim()}`);
    this.name = "HelmError";
  }
}

export async function helm(args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await run("bash", [`${repoRoot}scripts/helm.sh`, ...args], { cwd: repoRoot, maxBuffer: 32 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const failure = error as { stderr?: string; message: string };
    throw new HelmError(args, failure.stderr || failure.message);
  }
}

export interface RenderOptions {
  chart?: string;
  valuesFiles?: readonly string[];
  set?: Readonly<Record<string, string>>;
  release?: string;
  namespace?: string;
}

const renders = new Map<string, Promise<Manifest[]>>();

/**
 * `helm template`, parsed into one object per YAML document (empty documents dropped). The
 * same command renders once per test file: callers only read the result.
 */
export function renderChart(options: RenderOptions = {}): Promise<Manifest[]> {
  const args = ["template", options.release ?? "rt", options.chart ?? chartDir, "--namespace", options.namespace ?? "agents"];
  for (const file of options.valuesFiles ?? []) args.push("--values", file);
  for (const [key, value] of Object.entries(options.set ?? {})) args.push("--set", `${key}=${value}`);
  const key = JSON.stringify(args);
  let render = renders.get(key);
  if (!render) renders.set(key, (render = renderOnce(args)));
  return render;
}

async function renderOnce(args: readonly string[]): Promise<Manifest[]> {
  const out = await helm(args);
  const manifests: Manifest[] = [];
  for (const doc of YAML.parseAllDocuments(out)) {
    if (doc.errors.length > 0) throw new Error(`rendered YAML does not parse: ${doc.errors.map((e) => e.message).join("; ")}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    if (typeof value !== "object" || Array.isArray(value)) throw new Error(`rendered document is not an object: ${JSON.stringify(value).slice(0, 200)}`);
    manifests.push(value as Manifest);
  }
  return manifests;
}
