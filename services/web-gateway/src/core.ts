// The gateway's agent core: @agentrt/agent-core's fold, renderer and birth batch behind the
// AgentCorePort. One place, used by main.ts and by the tests.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { acceptedRequest, birthBatch, renderRequest, REQUEST_NOT_ACCEPTED_REASON, type AgentState } from "@agentrt/agent-core";
import { agentCoreAdapter } from "./api/agent-core-adapter.ts";
import type { AgentCorePort, BirthInput } from "./api/agent-core-port.ts";
import { GatewayError } from "./errors.ts";

/** The built-in project's prompt file (scenario 1's demo project), used when create() names none. */
export const DEFAULT_PROMPT_FILE = readFileSync(join(import.meta.dirname, "default-prompt-file.md"), "utf8");
export const DEFAULT_PROJECT = "demo";
export const CONFIG_REPO = "/repos/config";

export function projectSlug(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "") || "project";
}

export function gatewayCore(): AgentCorePort<AgentState> {
  return agentCoreAdapter({
    renderRequest: (state, request) => {
      // The fold ignores a request it cannot accept (no trigger pending, one already open,
      // paused): that request was never sent to a model, so there is nothing it "saw".
      if (acceptedRequest(state, request.offset) === null) {
        throw new GatewayError(
          "not_found",
          `${request.streamPath}@${request.offset} was not accepted: ${REQUEST_NOT_ACCEPTED_REASON}, so no model saw it.`,
          { streamPath: request.streamPath, requestOffset: request.offset },
        );
      }
      return renderRequest(state);
    },
    birthBatch: (input: BirthInput) => {
      const name = input.project ?? DEFAULT_PROJECT;
      return birthBatch({
        promptFileText: input.promptFile ?? DEFAULT_PROMPT_FILE,
        project: { name, slug: projectSlug(name) },
        streamPath: input.streamPath,
        workspace: input.streamPath,
        configRepo: CONFIG_REPO,
      });
    },
  });
}
