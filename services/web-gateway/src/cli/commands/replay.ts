// `pnpm agents replay FILE [--placeholder-protocol] [--runtime]`: replays a scenario file
// through the pure agent core and prints what the model saw for every request and what the
// system would append in reaction to every event. Users run it to see a turn exactly as the
// model did; the fixture tests run it to check the contract byte for byte. Reactions follow
// the production reaction policy (the reducer's defaults: project worker on, built-in texts).
//
// `--decide OFFSET@ISO …` prints instead, for each pair, what the reducer's head decision
// appends after folding up to OFFSET with the clock at ISO, or when it next wakes, and why
// (debounce, backoff, the birth hold, the autonomous-turn breaker, expiry).

import { readFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { type AgentEvent, ContractViolationError, parseStoredEvent, streamPathProblem } from "@agentrt/contract";
import { decideAt, replayScenario } from "@agentrt/agent-core";
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

const USAGE = "usage: agents replay FILE [--placeholder-protocol] [--runtime] [--decide OFFSET@ISO ...]";

const decidePairSchema = z
  .string()
  .regex(/^\d+@.+$/, "expected OFFSET@ISO, e.g. 26@2026-08-24T16:41:05.000Z")
  .transform((pair) => {
    const at = pair.indexOf("@");
    return { offset: Number(pair.slice(0, at)), iso: pair.slice(at + 1) };
  })
  .pipe(z.object({ offset: z.number().int().positive(), iso: z.iso.datetime({ offset: true }) }));

interface ParsedArgs {
  readonly files: string[];
  readonly flags: Set<string>;
  readonly decide: { offset: number; iso: string }[];
  readonly problems: string[];
}

function parseArgs(args: readonly string[]): ParsedArgs {
  const files: string[] = [];
  const flags = new Set<string>();
  const decide: { offset: number; iso: string }[] = [];
  const problems: string[] = [];
  let inDecide = false;
  for (const arg of args) {
    if (arg === "--decide") {
      inDecide = true;
      flags.add(arg);
    } else if (arg.startsWith("--")) {
      inDecide = false;
      if (arg === "--placeholder-protocol" || arg === "--runtime") flags.add(arg);
      else problems.push(`unknown option: ${arg}`);
    } else if (inDecide && /^\d/.test(arg)) {
      const pair = decidePairSchema.safeParse(arg);
      if (pair.success) decide.push(pair.data);
      else problems.push(`--decide ${arg}: ${pair.error.issues.map((i) => i.message).join("; ")}`);
    } else {
      files.push(arg);
    }
  }
  if (flags.has("--decide") && decide.length === 0 && problems.length === 0) problems.push("--decide needs at least one OFFSET@ISO");
  return { files, flags, decide, problems };
}

export async function replayCommand(args: readonly string[], out: (text: string) => void, err: (text: string) => void): Promise<number> {
  const { files, flags, decide, problems } = parseArgs(args);
  if (files.length !== 1 || problems.length > 0) {
    err(`${USAGE}${problems.length > 0 ? `\n${problems.join("\n")}` : ""}\n`);
    return 2;
  }
  const scenario = await loadScenario(files[0] as string);
  for (const s of scenario.skipped) err(`skipped event @${s.offset}: ${s.reason}\n`);
  if (decide.length > 0) {
    const decisions = decide.map(({ offset, iso }) => ({ offset, ...decideAt(scenario.events, offset, Date.parse(iso), scenario.streamPath) }));
    out(`${JSON.stringify({ decisions }, null, 2)}\n`);
    return 0;
  }
  const result = replayScenario(scenario.events, {
    streamPath: scenario.streamPath,
    placeholderProtocol: flags.has("--placeholder-protocol"),
    includeRuntime: flags.has("--runtime"),
  });
  out(`${JSON.stringify(result, null, 2)}\n`);
  return 0;
}
