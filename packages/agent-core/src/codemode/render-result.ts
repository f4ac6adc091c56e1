// Renders a script settlement back to the model as developer context (codemode.md
// "Rendering a settlement back"). Pure: the caller passes the duration and the history limit.
// A result too long for the history is SPILLED to a workspace file; writing that file is IO,
// so this module returns a plan: the shell writes `fileContent` to `path` and appends
// `eventIfWritten`, or appends `eventIfWriteFailed` (the truncated inline form) when it
// cannot write. Both carry the same idempotency key, so only one ever commits.

import { idempotencyKeys, textHead, type EventInputOf, type PayloadOf } from "@agentrt/contract";
import { formatDuration } from "../display/duration.ts";
import { fenced, fenceFor } from "./fence.ts";
import { inferJsonType } from "./json-type.ts";
import { PREVIEW_STEPS, previewJson } from "./preview.ts";

export type ScriptSettlement = PayloadOf<"capability-host/script-run-settled">["settlement"];
export type ScriptResultContextEvent = EventInputOf<"agents/context-added">;

/** Results whose compact JSON is at most this long ride the preamble inline as `data`. */
export const INLINE_DATA_LIMIT = 16_000;

export interface ScriptResultRenderInput {
  readonly executionId: string;
  readonly settlement: ScriptSettlement;
  readonly durationMs: number;
  /** Offset of the `script-run-settled` event (the idempotency key names it). */
  readonly settledOffset: number;
  /** `config.scriptResultHistoryLimit`: the longest rendering kept inline. */
  readonly historyLimit: number;
}

export type ScriptResultRenderPlan =
  | { readonly kind: "nothing" }
  | { readonly kind: "inline"; readonly event: ScriptResultContextEvent }
  | {
      readonly kind: "spill";
      readonly path: string;
      readonly fileContent: string;
      readonly contentType: "application/json" | "text/plain";
      readonly eventIfWritten: ScriptResultContextEvent;
      readonly eventIfWriteFailed: ScriptResultContextEvent;
    };

export const SCRIPT_FAILURE_HINT =
  "Before resending, check what you call: `await itx.docs.typecheck({ code })` typechecks a script without running it, " +
  'and `await itx.docs.search({ q: "a few related words" })` finds working examples and type declarations.';

export function scriptResultRenderKey(settledOffset: number): string {
  return idempotencyKeys.renderScriptResult(settledOffset);
}

export function spillPath(executionId: string, isText: boolean): string {
  return `script-results/${executionId.replace(/[^A-Za-z0-9._-]+/g, "-")}.${isText ? "txt" : "json"}`;
}

function resultEvent(input: ScriptResultRenderInput, content: string): ScriptResultContextEvent {
  return {
    type: "agents/context-added",
    payload: {
      role: "developer",
      content,
      actor: { type: "script", executionId: input.executionId },
      llmRequestPolicy: { behaviour: "after-current-request" },
    },
    idempotencyKey: scriptResultRenderKey(input.settledOffset),
  };
}

function accessorLine(compactChars: number): string {
  const accessor = compactChars <= INLINE_DATA_LIMIT ? "`results[0].data`" : "`await results[0].load(itx)`";
  return `This result is available to your next script as ${accessor} (the preamble \`results\` array, newest first).`;
}

export function planScriptResultRender(input: ScriptResultRenderInput): ScriptResultRenderPlan {
  const { settlement, historyLimit } = input;
  const dur = formatDuration(input.durationMs);
  if (settlement.status === "failed") return { kind: "inline", event: resultEvent(input, failureText(settlement, dur, historyLimit)) };
  if (settlement.result === undefined) {
    if (settlement.oversized === undefined) return { kind: "nothing" };
    return { kind: "inline", event: resultEvent(input, omittedText(settlement.oversized, dur, historyLimit)) };
  }

  const result = settlement.result;
  const isText = typeof result === "string";
  const serialized = isText ? result : (JSON.stringify(result, null, 2) ?? "null");
  const language = isText ? "" : "json";
  const trailer = accessorLine((JSON.stringify(result) ?? "").length);
  const content = `Your script returned (in ${dur}):\n${fenced(serialized, language)}\n${trailer}`;
  if (content.length <= historyLimit) return { kind: "inline", event: resultEvent(input, content) };

  const path = spillPath(input.executionId, isText);
  return {
    kind: "spill",
    path,
    fileContent: serialized,
    contentType: isText ? "text/plain" : "application/json",
    eventIfWritten: resultEvent(input, spilledText({ result, serialized, path, dur, trailer, historyLimit })),
    eventIfWriteFailed: resultEvent(input, truncatedText(serialized, language, dur, trailer, historyLimit)),
  };
}

function spilledText(args: {
  result: unknown;
  serialized: string;
  path: string;
  dur: string;
  trailer: string;
  historyLimit: number;
}): string {
  const { result, serialized, path, dur, historyLimit } = args;
  const isText = typeof result === "string";
  const typeText = inferJsonType(result);
  const loadLine =
    `${args.trailer.replace(/\.$/, "")}; the saved file reads back with ` +
    (isText ? `\`await itx.files.get("${path}").text()\`. ` : `\`JSON.parse(await itx.files.get("${path}").text())\`. `) +
    "Work on it inside the script and return only what you need (slice arrays, pick fields).";
  const compose = (type: string, preview: string) =>
    `Your script returned (in ${dur}) a result too large to show inline: ${serialized.length} chars ` +
    `(up to ${historyLimit} render inline). The full result was saved to the workspace file \`${path}\`.\n` +
    `Its type:\n${fenced(`type Result = ${type};`, "ts")}\n` +
    `Preview (long arrays and strings elided):\n${fenced(preview, isText ? "" : "json")}\n${loadLine}`;
  let last = "";
  for (const limits of PREVIEW_STEPS) {
    const preview = isText ? `${textHead(serialized, limits.stringChars * 10)}…` : previewJson(result, limits);
    last = compose(typeText, preview);
    if (last.length <= historyLimit) return last;
  }
  // The type alone is too big: describe it at the top level only.
  const shallow = compose(inferJsonType(Array.isArray(result) ? [] : typeof result === "object" ? {} : result), "…");
  return shallow.length < last.length ? shallow : last;
}

function truncatedText(serialized: string, language: string, dur: string, trailer: string, historyLimit: number): string {
  const fence = fenceFor(serialized);
  const marker =
    `… truncated (${serialized.length} chars total; up to ${historyLimit} render inline — return less: slice arrays, pick fields)`;
  const frame = (body: string) => `Your script returned (in ${dur}):\n${fence}${language}\n${body}\n${marker}\n${fence}\n${trailer}`;
  const budget = historyLimit - frame("").length;
  return frame(textHead(serialized, budget));
}

function failureText(
  settlement: Extract<ScriptSettlement, { status: "failed" }>,
  dur: string,
  historyLimit: number,
): string {
  const note = settlement.executionMayHaveOccurred
    ? "The script may have partially executed; inspect state before retrying."
    : "The script did not execute.";
  const compose = (error: string) =>
    `Your script failed during ${settlement.phase} (${settlement.failureKind}, after ${dur}):\n${fenced(error)}\n${note}\n${SCRIPT_FAILURE_HINT}`;
  const full = compose(settlement.error);
  if (full.length <= historyLimit) return full;
  const marker = `\n… truncated (${settlement.error.length} chars of error in total)`;
  const budget = historyLimit - compose(marker).length;
  return compose(`${textHead(settlement.error, budget)}${marker}`);
}

function omittedText(
  oversized: NonNullable<Extract<ScriptSettlement, { status: "succeeded" }>["oversized"]>,
  dur: string,
  historyLimit: number,
): string {
  const compose = (preview: string) =>
    `Your script returned (in ${dur}) a result too large to keep in its settlement: ${oversized.serializedChars} chars.\n` +
    `Its type:\n${fenced(`type Result = ${oversized.typeText};`, "ts")}\n` +
    `Preview:\n${fenced(preview, "json")}\n` +
    "Load it in your next script with `await results[0].load(itx)` (the preamble `results` array, newest first). " +
    "Work on it inside the script and return only what you need (slice arrays, pick fields).";
  const full = compose(oversized.preview);
  if (full.length <= historyLimit) return full;
  return compose(`${textHead(oversized.preview, historyLimit - compose("…").length)}…`);
}
