// The pure codemode helpers this service uses from @agentrt/agent-core, in one place, so the
// host spills, previews and types results exactly as the renderer describes them.
import { inferJsonType, PREVIEW_STEPS_FIRST, previewJson, spillPath, wrapScriptBody } from "./codemode-imports.ts";

export const agentCoreWrap = (code: string): string => wrapScriptBody(code);

/** Where an oversized result is spilled (the renderer's path, so its recipe points at it). */
export const resultSpillPath = (executionId: string, result: unknown): string => spillPath(executionId, typeof result === "string");

export const resultTypeText = (value: unknown): string => inferJsonType(value);

export const resultPreview = (value: unknown): string => previewJson(value, PREVIEW_STEPS_FIRST);
