// `pnpm agents replay FILE [--placeholder-protocol] [--runtime]`: replays a scenario file
// through the pure agent core and prints what the model saw for every request and what the
// system would append in reaction to every event. Users run it to see a turn exactly as the
// model did; the fixture tests run it to check the contract byte for byte. Reactions follow
// the production reaction policy, with the reducer's defaults (project worker on, built-in
// texts) unless `--no-project-worker` (PROJECT_WORKER=off) or `--agents-md FILE`
// (PROJECT_AGENTS_MD_FILE) say how the deployment runs it.
//
// `--decide OFFSET@ISO …` prints instead, for each pair, what the reducer's head decision
// appends after folding up to OFFSET with the clock at ISO, or when it next wakes, and why
// (debounce, backoff, the birth hold, the autonomous-turn breaker, expiry).

import { readFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { type AgentEvent, ContractViolationError, parseStoredEvent, streamPathProblem } from "@agentrt/contract";
import { decideAt, reactionPolicy, replayScenario } from "@agentrt/agent-core";
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

const USAGE = "usage: agents replay FILE [--placeholder-protocol] [--runtime] [--no-project-worker] [--agents-md FILE] [--decide OFFSET@ISO ...]";

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
  readonly agentsMdFile: string | undefined;
  readonly problems: string[];
}

function parseArgs(args: readonly string[]): ParsedArgs {
  const files: string[] = [];
  const flags = new Set<string>();
  const decide: { offset: number; iso: string }[] = [];
  const problems: string[] = [];
  let inDecide = false;
  let agentsMdFile: string | undefined;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] as string;
    if (arg === "--agents-md") {
      inDecide = false;
      agentsMdFile = args[i + 1];
      i += 1;
      if (agentsMdFile === undefined || agentsMdFile.startsWith("--")) problems.push("--agents-md needs a FILE");
    } else if (arg === "--decide") {
      inDecide = true;
      flags.add(arg);
    } else if (arg.startsWith("--")) {
      inDecide = false;
      if (arg === "--placeholder-protocol" || arg === "--runtime" || arg === "--no-project-worker") flags.add(arg);
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
  return { files, flags, decide, agentsMdFile, problems };
}

export async function replayCommand(args: readonly string[], out: (text: string) => void, err: (text: string) => void): Promise<number> {
  const { files, flags, decide, agentsMdFile, problems } = parseArgs(args);
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
  // Built as the reducer's main.ts builds it from PROJECT_WORKER and PROJECT_AGENTS_MD_FILE.
  const policy = reactionPolicy({
    projectWorker: !flags.has("--no-project-worker"),
    ...(agentsMdFile === undefined ? {} : { texts: { agentsMd: (await readFile(agentsMdFile, "utf8")).trim() } }),
  });
  const result = replayScenario(scenario.events, {
    streamPath: scenario.streamPath,
    policy,
    placeholderProtocol: flags.has("--placeholder-protocol"),
    includeRuntime: flags.has("--runtime"),
  });
  out(`${JSON.stringify(result, null, 2)}\n`);
  return 0;
}
