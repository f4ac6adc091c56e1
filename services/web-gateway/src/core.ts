// The gateway's agent core: @agentrt/agent-core's fold, renderer and birth batch behind the
// AgentCorePort. One place, used by main.ts and by the tests.

import type { AgentState } from "@agentrt/agent-core";
import { agentCoreAdapter } from "./api/agent-core-adapter.ts";
import type { AgentCorePort } from "./api/agent-core-port.ts";
import { GatewayError } from "./errors.ts";

export function gatewayCore(): AgentCorePort<AgentState> {
  return agentCoreAdapter({
    renderRequest: () => {
      throw new GatewayError("unavailable", "Rendering is not wired yet (waiting for renderRequest in @agentrt/agent-core).");
    },
    birthBatch: () => {
      throw new GatewayError("unavailable", "create() is not wired yet (waiting for birthBatch in @agentrt/agent-core).");
    },
  });
}
