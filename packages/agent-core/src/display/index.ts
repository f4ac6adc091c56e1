// @agentrt/agent-core/display: what the web UI and the CLI show (durations, streamed chunk
// text, reply prose, agent titles, how a reply ended) and what their controls send (stop, pause, resume).
// Browser-safe: pure functions, no node imports, no zod at runtime.
export { formatDuration, elapsedMs } from "./duration.ts";
export { chunkText, chunksText } from "./chunk-text.ts";
export { replyProse, oneLine } from "./reply-preview.ts";
export { revealBidiControls } from "./visible-text.ts";
export { cutShortNote, FINISH_REASON_PATTERN } from "./cut-short.ts";
export { agentTitle, titleFromMessage, DERIVED_TITLE_MAX } from "./title.ts";
export { stopBatch, pauseBatch, resumeBatch, STOP_NOTE, STOPPED_REASON, PAUSED_REASON, RESUMED_REASON } from "./controls.ts";
export { chatControls, foldWireEventInto, initialChatFold, type ChatControls } from "./chat-controls.ts";
