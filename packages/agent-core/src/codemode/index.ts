// Codemode: parsing model replies into scripts (fenced and tag dialects), the interpreter's
// reactions, rendering settlements back, the live lane and the preamble. All pure.
export { type ParsedReply, type ReplyDialect, joinProse } from "./reply.ts";
export { parseFencedReply } from "./fenced.ts";
export { parseTagReply } from "./tag.ts";
export { wrapScriptBody, isAsyncFunctionSource } from "./wrap.ts";
export { isOwnOpenReply, replyEvents, scriptExpiresAt, type AssistantContextEvent } from "./interpret.ts";
export { inferJsonType } from "./json-type.ts";
export { previewJson, PREVIEW_STEPS, type PreviewLimits } from "./preview.ts";
export {
  planScriptResultRender,
  scriptResultRenderKey,
  spillPath,
  INLINE_DATA_LIMIT,
  SCRIPT_FAILURE_HINT,
  type ScriptSettlement,
  type ScriptResultRenderInput,
  type ScriptResultRenderPlan,
  type ScriptResultContextEvent,
} from "./render-result.ts";
export { codemodeReactions, planSettlementRender } from "./reactions.ts";
export {
  createLiveLaneState,
  applyChunksEvent,
  endRequest,
  liveDeltas,
  type LiveLaneState,
  type LiveDelta,
  type LiveDialect,
} from "./live-lane.ts";
export {
  applyPreambleEvent,
  buildPreambleSource,
  buildResultsPreamble,
  buildScriptPrelude,
  RESULTS_PREAMBLE_MAX,
  RESULT_ERROR_TEXT_LIMIT,
  RESULTS_ITX_TYPE,
  type PreambleEntry,
  type SettledScriptResult,
  type ResultsPreambleOptions,
} from "./preamble.ts";
export {
  decideScriptRun,
  runDeadline,
  scriptScopeAt,
  type ScriptAgentScope,
  type ScriptRunDecision,
  type ScriptRunLimits,
  type ScriptRunRequested,
} from "./script-lifecycle.ts";
