// The live lane: while a reply streams (ephemeral `agent/llm-response-chunks`), publish
// previews of its prose and its script so a UI shows both as they are written. The durable
// truth is the assistant item; these deltas are best effort. They are INCREMENTS: append
// `text` to the prose and `code` to the script shown so far. A gap in the chunk sequence
// means a lost flush, so deltas for that request stop (the UI waits for the durable reply).
//
// To never retract what was sent, an unfinished last line that could become a marker (a
// `<codemode` opener or closer, a ``` fence) is held back until its newline arrives (or the
// stream finishes), and trailing whitespace is held until something follows it.

import type { AgentEvent, EventInputOf } from "@agentrt/contract";
import { chunkText } from "../display/chunk-text.ts";
import { normaliseStatus } from "./reply.ts";

export type LiveDialect = "fenced" | "tag" | "auto";
export type LiveDelta = EventInputOf<"render/message-delta"> | EventInputOf<"render/script-delta">;

/**
 * Past this many characters, a lane's preview is worked out again only once its text has grown by
 * an eighth since the last time (or the reply finished): each preview reads the whole text, so
 * one per flush made a 390 KB reply dripped in 100-character flushes cost the reducer 8 s of CPU
 * (red-team). Batched geometrically, a reply costs a few times its length in all; below this, every
 * flush still gets its preview.
 */
export const LIVE_PREVIEW_EVERY_FLUSH_CHARS = 8_192;

interface RequestLane {
  readonly nextSequence: number;
  readonly text: string;
  /** The text's length when its preview was last worked out. */
  readonly previewedAt: number;
  readonly finished: boolean;
  readonly stopped: boolean;
  readonly emittedProse: string;
  readonly emittedCode: string;
  readonly emittedStatus: string | undefined;
}

export interface LiveLaneState {
  readonly dialect: LiveDialect;
  readonly maxRequests: number;
  /** Per request offset, oldest first (bounded by `maxRequests`). */
  readonly requests: ReadonlyMap<number, RequestLane>;
}

export function createLiveLaneState(options: { dialect?: LiveDialect; maxRequests?: number } = {}): LiveLaneState {
  return { dialect: options.dialect ?? "auto", maxRequests: options.maxRequests ?? 8, requests: new Map() };
}

interface LiveSplit {
  readonly prose: string;
  readonly code: string | null;
  readonly status: string | undefined;
}

const TAG_OPENER = /^[ \t]*<codemode((?:\s+[\w-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*>/m;
const FENCED_OPENER = /^```(?:ts|typescript|tsx|js|javascript|jsx|mts)\b([^\n]*)\n/m;

function couldBeMarker(line: string): boolean {
  const t = line.trimStart();
  return t.startsWith("<") || t.startsWith("`");
}

function statusIn(attributes: string): string | undefined {
  const match = /\bstatus\s*=\s*(?:"([^"]*)"|'([^']*)')/.exec(attributes);
  return normaliseStatus(match?.[1] ?? match?.[2]);
}

/** Where prose and script stand in the text received so far (a preview, not the parser). */
function splitLive(received: string, dialect: LiveDialect, finished: boolean): LiveSplit {
  const lastBreak = received.lastIndexOf("\n");
  const stable = !finished && couldBeMarker(received.slice(lastBreak + 1)) ? received.slice(0, lastBreak + 1) : received;
  const tag = dialect === "fenced" ? null : TAG_OPENER.exec(stable);
  const fenced = dialect === "tag" ? null : FENCED_OPENER.exec(stable);
  const opener = tag !== null && (fenced === null || tag.index <= fenced.index) ? { m: tag, kind: "tag" as const } : fenced === null ? null : { m: fenced, kind: "fenced" as const };
  if (opener === null) return { prose: stable.trim(), code: null, status: undefined };

  const before = stable.slice(0, opener.m.index);
  const rest = stable.slice(opener.m.index + opener.m[0].length);
  const closeAt = opener.kind === "tag" ? rest.indexOf("</codemode>") : rest.search(/^```[ \t]*$/m);
  const closerLength = opener.kind === "tag" ? "</codemode>".length : 3;
  const code = closeAt === -1 ? rest : rest.slice(0, closeAt);
  const after = closeAt === -1 ? "" : rest.slice(closeAt + closerLength);
  const prose = [before.trim(), after.trim()].filter((p) => p.length > 0).join("\n\n");
  return { prose, code: code.trim(), status: statusIn(opener.m[1] ?? "") };
}

function deltasFor(lane: RequestLane, llmRequestOffset: number, dialect: LiveDialect): { lane: RequestLane; deltas: LiveDelta[] } {
  const split = splitLive(lane.text, dialect, lane.finished);
  const deltas: LiveDelta[] = [];
  let { emittedProse, emittedCode, emittedStatus } = lane;
  if (split.prose.length > emittedProse.length && split.prose.startsWith(emittedProse)) {
    deltas.push({ type: "render/message-delta", payload: { llmRequestOffset, text: split.prose.slice(emittedProse.length) }, ephemeral: true });
    emittedProse = split.prose;
  }
  if (split.code !== null) {
    const newStatus = split.status !== undefined && split.status !== emittedStatus;
    const grew = split.code.length > emittedCode.length && split.code.startsWith(emittedCode);
    if (grew || newStatus) {
      const code = grew ? split.code.slice(emittedCode.length) : "";
      const payload = split.status === undefined ? { llmRequestOffset, code } : { llmRequestOffset, code, status: split.status };
      deltas.push({ type: "render/script-delta", payload, ephemeral: true });
      if (grew) emittedCode = split.code;
      emittedStatus = split.status;
    }
  }
  return { lane: { ...lane, emittedProse, emittedCode, emittedStatus }, deltas };
}

export function applyChunksEvent(state: LiveLaneState, event: AgentEvent): { state: LiveLaneState; deltas: LiveDelta[] } {
  if (event.type !== "agent/llm-response-chunks") return { state, deltas: [] };
  const { llmRequestOffset, sequence, chunks } = event.payload;
  const prior: RequestLane = state.requests.get(llmRequestOffset) ?? {
    nextSequence: 0,
    text: "",
    previewedAt: 0,
    finished: false,
    stopped: false,
    emittedProse: "",
    emittedCode: "",
    emittedStatus: undefined,
  };
  if (sequence < prior.nextSequence) return { state, deltas: [] }; // a duplicate delivery
  const requests = new Map(state.requests);
  requests.delete(llmRequestOffset);
  if (prior.stopped || sequence > prior.nextSequence) {
    requests.set(llmRequestOffset, { ...prior, stopped: true, nextSequence: sequence + 1 });
    return { state: { ...state, requests: bounded(requests, state.maxRequests) }, deltas: [] };
  }
  let text = prior.text;
  let finished = prior.finished;
  for (const chunk of chunks) {
    const piece = chunkText(chunk);
    text += piece.text;
    finished ||= piece.done;
  }
  const grown = { ...prior, text, finished, nextSequence: sequence + 1 };
  if (!finished && text.length > LIVE_PREVIEW_EVERY_FLUSH_CHARS && text.length - prior.previewedAt < prior.previewedAt / 8) {
    requests.set(llmRequestOffset, grown);
    return { state: { ...state, requests: bounded(requests, state.maxRequests) }, deltas: [] };
  }
  const { lane, deltas } = deltasFor({ ...grown, previewedAt: text.length }, llmRequestOffset, state.dialect);
  requests.set(llmRequestOffset, lane);
  return { state: { ...state, requests: bounded(requests, state.maxRequests) }, deltas };
}

/** Forgets a request's lane (its reply is durable now): a lane holds the whole reply text. */
export function endRequest(state: LiveLaneState, llmRequestOffset: number): LiveLaneState {
  if (!state.requests.has(llmRequestOffset)) return state;
  const requests = new Map(state.requests);
  requests.delete(llmRequestOffset);
  return { ...state, requests };
}

function bounded(requests: Map<number, RequestLane>, max: number): Map<number, RequestLane> {
  while (requests.size > max) {
    const oldest = requests.keys().next();
    if (oldest.done === true) break;
    requests.delete(oldest.value);
  }
  return requests;
}

/** Folds a run of live events from a fresh lane; the deltas they produce, in order. */
export function liveDeltas(events: Iterable<AgentEvent>, options: { dialect?: LiveDialect } = {}): LiveDelta[] {
  let state = createLiveLaneState(options);
  const deltas: LiveDelta[] = [];
  for (const event of events) {
    const step = applyChunksEvent(state, event);
    state = step.state;
    deltas.push(...step.deltas);
  }
  return deltas;
}
