// What one script sees of its agent: the folded config, the preamble entries set before its
// request and the last 20 settled results (newest first) as the `results` preamble. The
// folding and the source text are agent-core's pure helpers; this module only picks events.

import {
  applyPreambleEvent,
  buildPreambleSource,
  buildResultsPreamble,
  type PreambleEntry,
  RESULTS_PREAMBLE_MAX,
  type SettledScriptResult,
} from "@agentrt/agent-core";
import { DEFAULT_AGENT_CONFIG, mergeAgentConfig, type AgentConfig, type AgentEvent, type ScriptAuthority } from "@agentrt/contract";
import { authorityAt } from "./authority/script-authority.ts";

export interface ScriptScope {
  readonly config: AgentConfig;
  readonly preamble: string;
  readonly resultsPreamble: string;
  /** What the script may touch: its agent's grant, limited to the requesting key's scope (authority/). */
  readonly authority: ScriptAuthority;
}

/** Folds the events strictly before `beforeOffset` into the scope of the script requested there. */
export function scopeAt(events: readonly AgentEvent[], beforeOffset: number): ScriptScope {
  let config = DEFAULT_AGENT_CONFIG;
  let preamble: readonly PreambleEntry[] = [];
  const settled: SettledScriptResult[] = [];
  for (const event of events) {
    if (event.offset >= beforeOffset) break;
    if (event.type === "agent/configured") config = mergeAgentConfig(config, event.payload.config) ?? config;
    else if (event.type === "capability-host/script-run-settled") settled.push(event.payload);
    else preamble = applyPreambleEvent(preamble, event);
  }
  return {
    config,
    preamble: buildPreambleSource(preamble),
    resultsPreamble: buildResultsPreamble(settled.slice(-RESULTS_PREAMBLE_MAX).reverse()),
    authority: authorityAt(events, beforeOffset),
  };
}
