// `pnpm agents replay FILE [--placeholder-protocol] [--runtime]`: replays a scenario file
// through the pure agent core and prints what the model saw for every request and what the
// system would append in reaction to every event. Users run it to see a turn exactly as the
// model did; the fixture tests run it to check the contract byte for byte.

import { readFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { type AgentEvent, ContractViolationError, parseStoredEvent, streamPathProblem } from "@agentrt/contract";
import { replayScenario } from "@agentrt/agent-core";
import { parse as parseYaml } from "yaml";
import { z } from "zod";

const scenarioEventSchema = z.object({
  offset: z.number().int().positive(),
  createdAt: z.string(),
  type: z.string(),
  payload: z.unknown(),
  idempotencyKey: z.string().optional(),
});

const scenarioSchema = z.object({
  name: z.string().optional(),
  streamPath: z.string().optional(),
  base: z.string().optional(),
  events: z.array(scenarioEventSchema),
});

export interface LoadedScenario {
  readonly streamPath: string;
  readonly events: AgentEvent[];
  /** Events the core would skip (invalid or unknown), with the reason. */
  readonly skipped: { offset: number; reason: string }[];
}

/** Reads a scenario file and the chain of `base` fixtures it continues (same folder). */
export async function loadScenario(file: string, seen: ReadonlySet<string> = new Set()): Promise<LoadedScenario> {
  if (seen.has(file)) throw new ContractViolationError("invalid_event", `Scenario "${file}": circular "base" chain.`);
  const document = parseYaml(await readFile(file, "utf8")) as unknown;
  const parsed = scenarioSchema.safeParse(document);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    throw new ContractViolationError("invalid_event", `Scenario "${file}" is not a scenario: ${problems}.`);
  }
  const scenario = parsed.data;
  const base = scenario.base === undefined ? undefined : await loadScenario(join(dirname(file), `${scenario.base}.yaml`), new Set([...seen, file]));
  const streamPath = scenario.streamPath ?? base?.streamPath ?? `/scenarios/${basename(file).replace(/[^A-Za-z0-9_-]+/g, "-")}`;
  const pathProblem = streamPathProblem(streamPath);
  if (pathProblem !== null) throw new ContractViolationError("invalid_stream_path", `Scenario "${file}": streamPath ${pathProblem}.`);
  const events = [...(base?.events ?? [])];
  const skipped = [...(base?.skipped ?? [])];
  for (const raw of scenario.events) {
    const result = parseStoredEvent({ ...raw, streamPath });
    if (result.ok) events.push(result.event);
    else skipped.push({ offset: raw.offset, reason: result.reason });
  }
  return { streamPath, events, skipped };
}

export async function replayCommand(args: readonly string[], out: (text: string) => void, err: (text: string) => void): Promise<number> {
  const flags = new Set(args.filter((a) => a.startsWith("--")));
  const files = args.filter((a) => !a.startsWith("--"));
  const unknown = [...flags].filter((f) => f !== "--placeholder-protocol" && f !== "--runtime");
  if (files.length !== 1 || unknown.length > 0) {
    err(`usage: agents replay FILE [--placeholder-protocol] [--runtime]${unknown.length > 0 ? `\nunknown option(s): ${unknown.join(", ")}` : ""}\n`);
    return 2;
  }
  const scenario = await loadScenario(files[0] as string);
  for (const s of scenario.skipped) err(`skipped event @${s.offset}: ${s.reason}\n`);
  const result = replayScenario(scenario.events, {
    streamPath: scenario.streamPath,
    placeholderProtocol: flags.has("--placeholder-protocol"),
    includeRuntime: flags.has("--runtime"),
  });
  out(`${JSON.stringify(result, null, 2)}\n`);
  return 0;
}
