// Who owns, emits and consumes each event type (contract.md "Ownership"), as data so that
// services can check at runtime that they only emit what the contract lets them.

import type { EventType } from "./events.ts";

export type ServiceName = "web-gateway" | "agent-reducer" | "llm-driver" | "capability-host" | "core";

export interface OwnershipEntry {
  readonly owner: ServiceName;
  readonly emittedBy: readonly string[];
  readonly consumedBy: readonly string[];
}

export const EVENT_OWNERSHIP: Readonly<Record<EventType, OwnershipEntry>> = {
  "agent/created": { owner: "web-gateway", emittedBy: ["gateway (create)"], consumedBy: ["reducer"] },
  "agent/configured": { owner: "web-gateway", emittedBy: ["gateway", "project workers"], consumedBy: ["reducer", "driver", "host"] },
  "agent/binding-set": { owner: "web-gateway", emittedBy: ["integrations"], consumedBy: ["integrations (reducer ignores)"] },
  "agents/context-added": {
    owner: "agent-reducer",
    emittedBy: ["gateway (user input)", "reducer (renders)", "driver (assistant output)", "workers"],
    consumedBy: ["reducer", "driver"],
  },
  "agents/context-rewritten": { owner: "agent-reducer", emittedBy: ["gateway", "operators"], consumedBy: ["reducer", "driver"] },
  "agents/web-message-sent": {
    owner: "web-gateway",
    emittedBy: ["capability host (itx.chat.sendMessage)", "codemode interpreter"],
    consumedBy: ["reducer", "gateway UI"],
  },
  "agent/llm-request-requested": { owner: "agent-reducer", emittedBy: ["reducer"], consumedBy: ["reducer", "driver"] },
  "agent/llm-request-settled": { owner: "llm-driver", emittedBy: ["driver", "reducer (expiry, interrupt)"], consumedBy: ["reducer", "driver"] },
  "agent/llm-response-chunks": { owner: "llm-driver", emittedBy: ["driver (ephemeral)"], consumedBy: ["gateway live clients", "codemode live lane"] },
  "agent/token-usage-reported": { owner: "llm-driver", emittedBy: ["driver"], consumedBy: ["reducer (tally, compaction)"] },
  "agent/summary-updated": {
    owner: "agent-reducer",
    emittedBy: ["scripts (itx.agent.append)", "reducer (waiting clear)", "codemode (activity)"],
    consumedBy: ["reducer", "gateway UI"],
  },
  "agent/paused": { owner: "agent-reducer", emittedBy: ["reducer (breaker)", "operators"], consumedBy: ["reducer"] },
  "agent/resumed": { owner: "agent-reducer", emittedBy: ["reducer (resume)", "operators"], consumedBy: ["reducer"] },
  "agent/runtime-changed": { owner: "agent-reducer", emittedBy: ["reducer"], consumedBy: ["gateway UI"] },
  "capability-host/script-run-requested": { owner: "capability-host", emittedBy: ["codemode interpreter", "API callers"], consumedBy: ["host", "reducer"] },
  "capability-host/script-run-started": { owner: "capability-host", emittedBy: ["host"], consumedBy: ["host"] },
  "capability-host/script-run-settled": { owner: "capability-host", emittedBy: ["host"], consumedBy: ["host", "reducer (renders result)"] },
  "capability-host/preamble-set": { owner: "capability-host", emittedBy: ["scripts", "operators"], consumedBy: ["host", "reducer (transcribes)"] },
  "capability-host/preamble-removed": { owner: "capability-host", emittedBy: ["scripts", "operators"], consumedBy: ["host", "reducer (transcribes)"] },
  "stream/error-occurred": { owner: "core", emittedBy: ["any service"], consumedBy: ["reducer (transcribes)"] },
  "render/message-delta": { owner: "agent-reducer", emittedBy: ["codemode interpreter (ephemeral)"], consumedBy: ["gateway live clients"] },
  "render/script-delta": { owner: "agent-reducer", emittedBy: ["codemode interpreter (ephemeral)"], consumedBy: ["gateway live clients"] },
};
