// Which event types each service's store client may append (contract.md "Ownership", the
// "emitted by" column, made exact). Each service wraps its store with this list, so a bug or a
// compromised dependency in one service cannot write another service's events: defence in
// depth behind the gateway's API table and the per-service NATS users.

import type { EventType } from "./events.ts";
import { API_APPENDABLE } from "./api-appends.ts";
import type { ServiceName } from "./ownership.ts";

export type EmittingService = Exclude<ServiceName, "core">;

const apiTypes = Object.keys(API_APPENDABLE) as EventType[];

export const SERVICE_EMITS: Readonly<Record<EmittingService, readonly EventType[]>> = {
  // What API callers may append, plus the birth batch of POST /v1/agents.
  "web-gateway": [...new Set<EventType>([...apiTypes, "agent/created", "agent/configured", "agents/context-added"])],
  // The reducer also runs the codemode interpreter and the project worker.
  "agent-reducer": [
    "agents/context-added",
    "agent/configured",
    "agent/llm-request-requested",
    "agent/llm-request-settled",
    "agent/summary-updated",
    "agent/paused",
    "agent/resumed",
    "agent/runtime-changed",
    "agents/web-message-sent",
    "capability-host/script-run-requested",
    "render/message-delta",
    "render/script-delta",
    "stream/error-occurred",
  ],
  "llm-driver": [
    "agents/context-added",
    "agent/llm-request-settled",
    "agent/llm-response-chunks",
    "agent/token-usage-reported",
    "stream/error-occurred",
  ],
  // Its own run lifecycle, itx calls (sendMessage, agents.create/message) and what scripts may
  // append to their own agent with itx.agent.append.
  "capability-host": [
    "capability-host/script-run-started",
    "capability-host/script-run-settled",
    "capability-host/preamble-set",
    "capability-host/preamble-removed",
    "agents/web-message-sent",
    "agents/context-added",
    "agents/context-rewritten",
    "agent/created",
    "agent/configured",
    "agent/summary-updated",
    "agent/paused",
    "agent/resumed",
    "stream/error-occurred",
  ],
};

/** Whether `service` may append events of `type` (false for types it does not emit). */
export function serviceMayEmit(service: EmittingService, type: string): boolean {
  return (SERVICE_EMITS[service] as readonly string[]).includes(type);
}
