// The reaction policy: which interpreters react to an agent's events, whether the built-in
// project worker runs (and with which texts), which reply dialect the live lane previews and
// when the runtime summary is published. One value, `PRODUCTION_REACTION_POLICY` (or
// `reactionPolicy(config)` with the deployment's worker switch and texts), is used by the
// reducer, `agents replay` and the specs alike, so what a replay reports is what production
// appends.
//
// The rules that do not vary by deployment live here as functions, not as knobs:
//  - a stream that was never born is not an agent: nothing reacts to its events, except the
//    birth certificate itself;
//  - the project worker's birth reaction is for agents born into a project (`agent/created`
//    names the project, as the gateway's create() writes it); a bare agent keeps the contract's
//    birth window and defaults;
//  - the runtime summary exists only for born agents.

import type { AgentEvent, AgentEventOf } from "@agentrt/contract";
import type { LiveDialect } from "./codemode/live-lane.ts";
import type { ProjectWorkerTexts } from "./project-worker/reactions.ts";
import type { ReactionState } from "./state.ts";

export interface ReactionPolicy {
  /** The platform's fenced-dialect interpreter and script-result rendering. */
  readonly codemode: boolean;
  /** The built-in project worker (birth reaction, tag dialect), or null when it is off. */
  readonly projectWorker: { readonly texts: ProjectWorkerTexts } | null;
}

/** What the reducer runs with its defaults (`PROJECT_WORKER=on`, built-in texts). */
export const PRODUCTION_REACTION_POLICY: ReactionPolicy = Object.freeze({
  codemode: true,
  projectWorker: Object.freeze({ texts: Object.freeze({}) }),
});

/** The production policy for a deployment's project-worker switch and texts. */
export function reactionPolicy(options: { readonly projectWorker?: boolean; readonly texts?: ProjectWorkerTexts } = {}): ReactionPolicy {
  if (options.projectWorker === false) return { codemode: true, projectWorker: null };
  return { codemode: true, projectWorker: { texts: options.texts ?? {} } };
}

/** Whether anything reacts to this event of this stream at all. */
export function reactsTo(before: ReactionState, event: AgentEvent): boolean {
  return before.birthCertificate !== null || event.type === "agent/created";
}

/** `agent/created` naming its project: the project worker's cue to configure the agent. */
export function bornIntoProject(event: AgentEventOf<"agent/created">): boolean {
  const project = event.payload.project;
  return typeof project === "object" && project !== null;
}

/**
 * Which reply dialect to preview on the live lane, if any: the one that will interpret the
 * reply (fenced while `interpretResponses` is on; tag when the project worker interprets).
 */
export function liveDialectOf(state: ReactionState, policy: ReactionPolicy = PRODUCTION_REACTION_POLICY): LiveDialect | undefined {
  if (state.birthCertificate === null) return undefined;
  if (state.config.interpretResponses) return policy.codemode ? "fenced" : undefined;
  return policy.projectWorker === null ? undefined : "tag";
}

/** Whether the agent's runtime summary is published (live lane `agent/runtime-changed`). */
export function publishesRuntime(state: ReactionState): boolean {
  return state.birthCertificate !== null;
}
