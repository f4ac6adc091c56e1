// What one script sees of its agent: the core's scope (folded config, the preamble entries set
// before its request, the last settled results as the `results` preamble) plus what it may
// touch, its authority (authority/).

import { scriptScopeAt, type ScriptAgentScope } from "@agentrt/agent-core";
import type { AgentEvent, ScriptAuthority } from "@agentrt/contract";
import { authorityAt } from "./authority/script-authority.ts";

export interface ScriptScope extends ScriptAgentScope {
  /** What the script may touch: its agent's grant, limited to the requesting key's scope (authority/). */
  readonly authority: ScriptAuthority;
}

/** Folds the events strictly before `beforeOffset` into the scope of the script requested there. */
export function scopeAt(events: readonly AgentEvent[], beforeOffset: number): ScriptScope {
  return { ...scriptScopeAt(events, beforeOffset), authority: authorityAt(events, beforeOffset) };
}
