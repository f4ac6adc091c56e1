import type { PreviewLimits } from "@agentrt/agent-core";
export { inferJsonType, previewJson, spillPath, wrapScriptBody, INLINE_DATA_LIMIT } from "@agentrt/agent-core";

export const PREVIEW_STEPS_FIRST: PreviewLimits = { arrayItems: 5, stringChars: 200, depth: 6, objectKeys: 40 };
