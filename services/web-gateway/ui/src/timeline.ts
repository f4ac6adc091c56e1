// Turns a stream's events (plus the live text streamed so far) into what the chat view
// shows: user and assistant messages, the streaming reply, scripts with status, result and
// duration, errors, and a marker per request linking to what the model saw. Pure.

import type { StreamEvent } from "./types.ts";

export type TimelineItem =
  | { kind: "user"; offset: number; content: string }
  | { kind: "assistant"; offset: number; content: string; requestOffset?: number }
  | { kind: "streaming"; requestOffset: number; text: string }
  | { kind: "request"; offset: number; status: string; model: string }
  | {
      kind: "script";
      offset: number;
      executionId: string;
      code: string;
      status: "requested" | "running" | "succeeded" | "failed";
      result?: string;
      durationMs?: number;
    }
  | { kind: "error"; offset: number; message: string };

/** Text of the reply streamed so far for one request, from raw provider chunks. */
export function chunkText(chunks: unknown[]): string {
  let text = "";
  for (const chunk of chunks as any[]) { // eslint-disable-line @typescript-eslint/no-explicit-any -- provider chunks are untyped
    const delta = chunk?.choices?.[0]?.delta?.content;
    if (typeof delta === "string") text += delta;
    else if (chunk?.type === "response.output_text.delta" && typeof chunk.delta === "string") text += chunk.delta;
  }
  return text;
}

/** Prose of a reply without its script (the script is shown as its own card). */
export function proseOf(content: string): string {
  return content
    .replace(/<codemode[^>]*>[\s\S]*?<\/codemode>/g, "")
    .replace(/```ts[\s\S]*?```/g, "")
    .trim();
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 120_000) return `${(Math.round(ms / 100) / 10).toString()}s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  return s === 0 ? `${m}m` : `${m}m ${s}s`;
}

export function buildTimeline(events: readonly StreamEvent[], live: ReadonlyMap<number, string>): TimelineItem[] {
  const items: TimelineItem[] = [];
  const settled = new Map<number, string>();
  const scripts = new Map<string, Extract<TimelineItem, { kind: "script" }> & { requestedAt: string }>();
  for (const e of events) {
    if (e.type === "agent/llm-request-settled") settled.set(e.payload.requestOffset, e.payload.result.status);
  }
  const answered = new Set<number>();
  for (const e of events) {
    switch (e.type) {
      case "agents/context-added": {
        const p = e.payload;
        if (p.role === "user") items.push({ kind: "user", offset: e.offset, content: p.content });
        else if (p.role === "assistant") {
          // The reducer's mirror of a web message is history for the model; the message itself is already shown.
          if (e.idempotencyKey?.startsWith("agent/render-web-response@")) break;
          if (typeof p.llmRequestOffset === "number") answered.add(p.llmRequestOffset);
          const prose = proseOf(p.content);
          if (prose !== "") items.push({ kind: "assistant", offset: e.offset, content: prose, requestOffset: p.llmRequestOffset });
        }
        break;
      }
      case "agents/web-message-sent":
        if (e.payload.llmRequestOffset === undefined) items.push({ kind: "assistant", offset: e.offset, content: e.payload.message });
        break;
      case "agent/llm-request-requested":
        items.push({ kind: "request", offset: e.offset, status: settled.get(e.offset) ?? "open", model: e.payload.model });
        break;
      case "capability-host/script-run-requested": {
        const item = { kind: "script" as const, offset: e.offset, executionId: e.payload.executionId, code: e.payload.code, status: "requested" as const, requestedAt: e.createdAt };
        scripts.set(e.payload.executionId, item);
        items.push(item);
        break;
      }
      case "capability-host/script-run-started": {
        const s = scripts.get(e.payload.executionId);
        if (s && s.status === "requested") s.status = "running";
        break;
      }
      case "capability-host/script-run-settled": {
        const s = scripts.get(e.payload.executionId);
        if (!s) break;
        const st = e.payload.settlement;
        s.status = st.status;
        s.result = st.status === "succeeded" ? (st.result === undefined ? "undefined" : JSON.stringify(st.result, null, 2)) : String(st.error);
        s.durationMs = Math.max(0, Date.parse(e.createdAt) - Date.parse(s.requestedAt));
        break;
      }
      case "stream/error-occurred":
        items.push({ kind: "error", offset: e.offset, message: e.payload.message });
        break;
      default:
        break;
    }
  }
  // A reply still streaming (no assistant item yet) shows its live text under its request.
  for (const [requestOffset, text] of live) {
    if (answered.has(requestOffset) || settled.has(requestOffset) || text === "") continue;
    const at = items.findIndex((i) => i.kind === "request" && i.offset === requestOffset);
    const item: TimelineItem = { kind: "streaming", requestOffset, text };
    if (at >= 0) items.splice(at + 1, 0, item);
    else items.push(item);
  }
  return items;
}
