// Turns a stream's events (plus the replies streaming on the live lane) into what the chat
// view shows: user and assistant messages, the streaming reply, scripts with status, result
// and duration, errors, pauses and resumes, and a marker per request linking to what the model
// saw. Pure. Durations, chunk text and reply prose come from the core's display module, so the
// chat shows what the model sees.

import { chunksText, cutShortNote, replyProse } from "@agentrt/agent-core/display";
import type { StreamEvent } from "./types.ts";

/**
 * A reply's prose, worked out once per stored event: the timeline is rebuilt on every event and
 * every live chunk, and parsing every reply each time made a long one cost the page its whole
 * history's parsing per update.
 */
const proseByPayload = new WeakMap<object, string>();
function proseOf(payload: { readonly content: string }): string {
  let prose = proseByPayload.get(payload);
  if (prose === undefined) {
    prose = replyProse(payload.content);
    proseByPayload.set(payload, prose);
  }
  return prose;
}

export type TimelineItem =
  | { kind: "user"; offset: number; content: string }
  | { kind: "assistant"; offset: number; content: string; requestOffset?: number }
  | { kind: "streaming"; requestOffset: number; text: string; script?: LiveScript }
  /** `note`: how its reply ended when not by the model finishing (cut at the output limit, by a content filter). */
  | { kind: "request"; offset: number; status: string; model: string; note?: string }
  | {
      kind: "script";
      offset: number;
      executionId: string;
      code: string;
      status: "requested" | "running" | "succeeded" | "failed";
      result?: string;
      durationMs?: number;
    }
  | { kind: "error"; offset: number; message: string }
  | { kind: "paused" | "resumed"; offset: number; reason?: string };

export interface LiveScript {
  readonly code: string;
  readonly status?: string;
}

/**
 * One reply while it streams, from the live lane: the text of the raw provider chunks in
 * sequence order and, when the agent interprets its replies, the reducer's previews
 * (`render/message-delta` and `render/script-delta`, increments) of the prose and the script
 * apart. Only text is kept: the chunks themselves (a tool call's arguments, 60 KB a delta) had
 * been held for as long as the page was open, and joined again on every chunk (red-team).
 */
export interface LiveReply {
  /** The sequence of the next chunk event the text continues with. */
  readonly next: number;
  /** The text of chunk events that came ahead of their turn, by sequence, until the gap closes. */
  readonly early: ReadonlyMap<number, string>;
  /** The raw reply text so far, chunks in sequence order. */
  readonly text: string;
  /** Prose from the previews; absent until the first preview arrives. */
  readonly prose?: string;
  readonly script?: LiveScript;
}

export type LiveReplies = ReadonlyMap<number, LiveReply>;

const emptyReply: LiveReply = { next: 0, early: new Map(), text: "" };

/** Folds one live-lane event into the streaming replies (other events leave them as they are). */
export function applyLiveEvent(live: LiveReplies, e: StreamEvent): LiveReplies {
  const requestOffset = e.payload?.llmRequestOffset;
  if (typeof requestOffset !== "number") return live;
  const reply = live.get(requestOffset) ?? emptyReply;
  let next: LiveReply;
  switch (e.type) {
    case "agent/llm-response-chunks": {
      const sequence = e.payload.sequence;
      const chunks = e.payload.chunks;
      if (typeof sequence !== "number" || sequence < reply.next || reply.early.has(sequence) || !Array.isArray(chunks)) return live;
      if (sequence > reply.next) {
        next = { ...reply, early: new Map(reply.early).set(sequence, chunksText(chunks)) };
        break;
      }
      // In turn: its text, then any that came early and now follow on.
      let text = reply.text + chunksText(chunks);
      let following = sequence + 1;
      let early = reply.early;
      if (early.has(following)) {
        const rest = new Map(early);
        for (; rest.has(following); following++) {
          text += rest.get(following) as string;
          rest.delete(following);
        }
        early = rest;
      }
      next = { ...reply, next: following, early, text };
      break;
    }
    case "render/message-delta":
      next = { ...reply, prose: (reply.prose ?? "") + String(e.payload.text ?? "") };
      break;
    case "render/script-delta": {
      const status = typeof e.payload.status === "string" ? e.payload.status : reply.script?.status;
      const code = (reply.script?.code ?? "") + String(e.payload.code ?? "");
      next = { ...reply, script: status === undefined ? { code } : { code, status } };
      break;
    }
    default:
      return live;
  }
  return new Map(live).set(requestOffset, next);
}

/**
 * The streaming replies without those a batch of stored events settled: a settled reply shows as
 * its stored message, and its live state had stayed for as long as the page was open.
 */
export function dropSettledReplies(live: LiveReplies, stored: readonly StreamEvent[]): LiveReplies {
  let kept: Map<number, LiveReply> | undefined;
  for (const e of stored) {
    const requestOffset = e.type === "agent/llm-request-settled" ? e.payload?.requestOffset : undefined;
    if (typeof requestOffset !== "number" || !(kept ?? live).has(requestOffset)) continue;
    kept ??= new Map(live);
    kept.delete(requestOffset);
  }
  return kept ?? live;
}

/**
 * The text of chunks past a gap, in sequence order: a page opened mid-reply never gets the
 * reply's first chunks, and what follows is shown all the same.
 */
function earlyText(reply: LiveReply): string {
  if (reply.early.size === 0) return "";
  return [...reply.early]
    .sort((a, b) => a[0] - b[0])
    .map(([, text]) => text)
    .join("");
}

/** What the streaming bubble shows: the previews once there are any, else the raw text. */
export function liveView(reply: LiveReply): { text: string; script?: LiveScript } {
  if (reply.prose === undefined && reply.script === undefined) return { text: reply.text + earlyText(reply) };
  return reply.script === undefined ? { text: reply.prose ?? "" } : { text: reply.prose ?? "", script: reply.script };
}

/** True when nobody has talked to the agent yet: the chat shows what to do instead. */
export function isEmptyChat(items: readonly TimelineItem[]): boolean {
  return !items.some((i) => i.kind === "user" || i.kind === "assistant" || i.kind === "streaming" || i.kind === "script");
}

export function buildTimeline(events: readonly StreamEvent[], live: LiveReplies): TimelineItem[] {
  const items: TimelineItem[] = [];
  const settled = new Map<number, { status: string; note?: string }>();
  const scripts = new Map<string, Extract<TimelineItem, { kind: "script" }> & { requestedAt: string }>();
  for (const e of events) {
    if (e.type === "agent/llm-request-settled") {
      const note = cutShortNote(e.payload.result);
      settled.set(e.payload.requestOffset, note === undefined ? { status: e.payload.result.status } : { status: e.payload.result.status, note });
    }
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
          const prose = proseOf(p);
          if (prose !== "") items.push({ kind: "assistant", offset: e.offset, content: prose, requestOffset: p.llmRequestOffset });
        }
        break;
      }
      case "agents/web-message-sent":
        if (e.payload.llmRequestOffset === undefined) items.push({ kind: "assistant", offset: e.offset, content: e.payload.message });
        break;
      case "agent/llm-request-requested":
        items.push({ kind: "request", offset: e.offset, model: e.payload.model, ...(settled.get(e.offset) ?? { status: "open" }) });
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
      case "agent/paused":
      case "agent/resumed": {
        const reason = typeof e.payload?.reason === "string" ? e.payload.reason : undefined;
        items.push(reason === undefined ? { kind: e.type === "agent/paused" ? "paused" : "resumed", offset: e.offset } : { kind: e.type === "agent/paused" ? "paused" : "resumed", offset: e.offset, reason });
        break;
      }
      case "stream/error-occurred":
        items.push({ kind: "error", offset: e.offset, message: e.payload.message });
        break;
      default:
        break;
    }
  }
  // A reply still streaming (no assistant item yet) shows under its request.
  for (const [requestOffset, reply] of live) {
    if (answered.has(requestOffset) || settled.has(requestOffset)) continue;
    const view = liveView(reply);
    if (view.text === "" && view.script === undefined) continue;
    const at = items.findIndex((i) => i.kind === "request" && i.offset === requestOffset);
    const item: TimelineItem = { kind: "streaming", requestOffset, ...view };
    if (at >= 0) items.splice(at + 1, 0, item);
    else items.push(item);
  }
  return items;
}
