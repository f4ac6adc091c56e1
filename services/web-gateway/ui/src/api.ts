// The UI's client of the gateway's HTTP API. The API key (when the gateway is not in dev
// mode) is kept in localStorage and sent as a bearer token.

import { isUnavailableStatus, retryWhileOutcomeUnknown } from "@agentrt/contract";
import type { AgentSummary, RenderedRequest, StreamEvent } from "./types.ts";

export type { AgentSummary, RenderedRequest, StreamEvent };

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const apiKey = {
  get: (): string => localStorage.getItem("agentrt.apiKey") ?? "",
  set: (key: string) => localStorage.setItem("agentrt.apiKey", key),
};

export function authHeaders(): Record<string, string> {
  const key = apiKey.get();
  return key ? { authorization: `Bearer ${key}` } : {};
}

export const enc = (streamPath: string) => encodeURIComponent(streamPath);

async function call<T>(method: string, url: string, body?: unknown): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: { ...authHeaders(), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await res.json();
  if (!res.ok) throw new ApiError(res.status, json?.error?.code ?? "unknown", json?.error?.message ?? res.statusText);
  return json as T;
}

/**
 * Sends a keyed append again while its outcome is unknown (the contract's
 * `retryWhileOutcomeUnknown`): no answer came back (fetch's TypeError), or the gateway answered 502-504.
 */
function retryUnknownOutcome<T>(call: () => Promise<T>): Promise<T> {
  return retryWhileOutcomeUnknown(call, (error) => error instanceof TypeError || (error instanceof ApiError && isUnavailableStatus(error.status)));
}

/** A fresh idempotency key (getRandomValues works on a page served over plain http too, randomUUID does not). */
function newKey(prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export const api = {
  listAgents: (prefix?: string) =>
    call<{ agents: AgentSummary[] }>("GET", `/v1/agents${prefix ? `?prefix=${encodeURIComponent(prefix)}` : ""}`),
  createAgent: (streamPath: string, promptFile?: string) =>
    call<{ streamPath: string }>("POST", "/v1/agents", { streamPath, ...(promptFile ? { promptFile } : {}) }),
  /** One key per message: sent again when its answer was lost, it is stored once. */
  sendMessage: (streamPath: string, content: string) => {
    const idempotencyKey = newKey("ui/send/");
    return retryUnknownOutcome(() =>
      call("POST", `/v1/streams/${enc(streamPath)}/events`, {
        events: [{ type: "agents/context-added", payload: { role: "user", content, actor: { type: "user", origin: "web" } }, idempotencyKey }],
      }),
    );
  },
  /** Appends one atomic batch (the chat's Stop, Pause and Resume send the core's batches). */
  appendEvents: (streamPath: string, events: readonly unknown[]) => call("POST", `/v1/streams/${enc(streamPath)}/events`, { events }),
  renderedRequest: (streamPath: string, offset: number) =>
    call<RenderedRequest>("GET", `/v1/agents/${enc(streamPath)}/requests/${offset}`),
};
