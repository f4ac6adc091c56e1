// What one script sees of its agent: the folded config, the preamble entries set before its
// request (first-position-preserving upserts, removals) and the last 20 settled results
// (newest first) as the `results` preamble. Pure: a function of the stream's events.

import { DEFAULT_AGENT_CONFIG, mergeAgentConfig, type AgentConfig, type AgentEvent } from "@agentrt/contract";
import { INLINE_DATA_LIMIT } from "./codemode-imports.ts";
import { resultTypeText } from "./codemode.ts";

export const RESULTS_IN_PREAMBLE = 20;
export const ERROR_TEXT_CHARS = 2_000;

export interface ScriptScope {
  readonly config: AgentConfig;
  readonly preamble: string;
  readonly resultsPreamble: string;
}

/** Folds the events strictly before `beforeOffset` into the scope of the script requested there. */
export function scopeAt(events: readonly AgentEvent[], beforeOffset: number): ScriptScope {
  let config = DEFAULT_AGENT_CONFIG;
  const preamble = new Map<string, string>();
  const settled: Extract<AgentEvent, { type: "capability-host/script-run-settled" }>[] = [];
  for (const event of events) {
    if (event.offset >= beforeOffset) break;
    switch (event.type) {
      case "agent/configured":
        config = mergeAgentConfig(config, event.payload.config) ?? config;
        break;
      case "capability-host/preamble-set":
        preamble.set(event.payload.key, event.payload.code); // a re-set keeps its first position
        break;
      case "capability-host/preamble-removed":
        preamble.delete(event.payload.key);
        break;
      case "capability-host/script-run-settled":
        settled.push(event);
        break;
      default:
        break;
    }
  }
  const entries = settled.slice(-RESULTS_IN_PREAMBLE).reverse().map((e) => resultEntry(e.payload.executionId, e.payload.settlement));
  return {
    config,
    preamble: [...preamble.entries()].map(([key, code]) => `// preamble "${key}"\n${code}`).join("\n"),
    resultsPreamble: `const results = [${entries.join(",\n")}] as const;`,
  };
}

type SettlementPayload = Extract<AgentEvent, { type: "capability-host/script-run-settled" }>["payload"]["settlement"];

function resultEntry(executionId: string, settlement: SettlementPayload): string {
  const id = JSON.stringify(executionId);
  if (settlement.status === "failed") {
    const error = settlement.error.length > ERROR_TEXT_CHARS ? `${settlement.error.slice(0, ERROR_TEXT_CHARS)}…` : settlement.error;
    return `{ executionId: ${id}, status: "failed", error: ${JSON.stringify(error)} }`;
  }
  if (settlement.oversized !== undefined) {
    const type = settlement.oversized.typeText;
    return `{ executionId: ${id}, status: "succeeded", load: async (itx: Itx): Promise<${type}> => ((await itx.capabilityHost.getScriptResult(${id})) as any)?.result }`;
  }
  const json = JSON.stringify(settlement.result ?? null);
  if (json.length <= INLINE_DATA_LIMIT) return `{ executionId: ${id}, status: "succeeded", data: ${json} }`;
  const type = resultTypeText(settlement.result);
  return `{ executionId: ${id}, status: "succeeded", load: async (itx: Itx): Promise<${type}> => ((await itx.capabilityHost.getScriptResult(${id})) as any)?.result }`;
}
