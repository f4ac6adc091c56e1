// Re-exports of the agent-core helpers the host shares with the renderer.
import type { PreviewLimits } from "@agentrt/agent-core";
export { inferJsonType, previewJson, spillPath, wrapScriptBody } from "@agentrt/agent-core";

/** The first (most generous) preview step of the renderer. */
export const PREVIEW_STEPS_FIRST: PreviewLimits = { arrayItems: 5, stringChars: 200, depth: 6, objectKeys: 40 };
