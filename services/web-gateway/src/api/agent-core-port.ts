// What the gateway needs from the pure agent core, as a port: the fold (for state, lists and
// "what the model saw"), the renderer and the birth batch. main.ts wires @agentrt/agent-core
// in; keeping it a port lets the gateway's transport code stay independent of the core's shape.

import type { AuditReport } from "@agentrt/agent-core";
import type { AgentEvent, AgentGrant, EventInput } from "@agentrt/contract";

export interface RenderedMessage {
  readonly role: string;
  readonly content: string;
}

export interface AgentView {
  readonly title: string | null;
  readonly activity: string | null;
  readonly waitingFor: string | null;
  readonly openRequestOffset: number | null;
  readonly paused: boolean;
}

export interface BirthInput {
  readonly streamPath: string;
  readonly promptFile?: string;
  readonly project?: string;
  /** Rides on the birth batch's agent/created (the gateway checked it against the key first). */
  readonly grant?: AgentGrant;
}

export interface AgentCorePort<S = unknown> {
  initialState(streamPath: string): S;
  /** Folds events in order through one working copy (a page at a time: linear, not a copy of the context per event). */
  foldEvents(state: S, events: Iterable<AgentEvent>): S;
  /** The summary fields the agents list shows. */
  view(state: S): AgentView;
  /** The state as JSON for `GET …/state`. */
  toJson(state: S): Record<string, unknown>;
  /** The exact messages of the request at `request` (state folded through it). */
  renderRequest(state: S, request: AgentEvent): RenderedMessage[];
  /** The atomic birth batch of a new agent. Throws a ContractViolationError on a bad prompt file. */
  birthBatch(input: BirthInput): EventInput[];
  /** The stream audit (agent-core's `StreamAudit`) at `nowMs`, taking a stream's events a page at a time. */
  auditor(nowMs: number): StreamAuditor;
}

export interface StreamAuditor {
  /** Takes the stream's next event, in offset order. */
  add(event: AgentEvent): void;
  report(): AuditResult;
}

/** The stream audit's report (agent-core's `AuditReport`), as `GET …/audit` returns it. */
export type AuditResult = AuditReport;
