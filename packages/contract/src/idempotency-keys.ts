// The idempotency keys services build, as reserved namespaces with ONE builder each. A key is
// a claim: "at most one event per (stream, key), forever" means whoever writes `agent/settle/R`
// first decides what the settlement of request R is. So every key a service builds lives in a
// namespace reserved for services, and the gateway refuses an API-submitted event whose key
// falls in one (squatting `agent/settle/R` would make the real driver's answer commit nothing).
// Services import the builders below instead of writing template strings of their own, so a
// namespace and the keys built in it can never drift apart.

import type { ServiceName } from "./ownership.ts";

export interface KeyNamespace {
  /** Every key of the namespace starts with this. */
  readonly prefix: string;
  /** Who builds keys in it (the reducer also runs the codemode interpreter and project worker). */
  readonly builtBy: readonly ServiceName[];
}

const ns = (prefix: string, ...builtBy: ServiceName[]): KeyNamespace => ({ prefix, builtBy });

export const RESERVED_KEY_NAMESPACES = {
  request: ns("agent/request/", "agent-reducer"),
  pause: ns("agent/pause/", "agent-reducer"),
  resume: ns("agent/resume/", "agent-reducer"),
  settle: ns("agent/settle/", "agent-reducer", "llm-driver"),
  expiryError: ns("agent/expiry-error/", "agent-reducer"),
  failureError: ns("agent/failure-error/", "llm-driver"),
  assistantContext: ns("agent/assistant-context@", "llm-driver"),
  tokenUsage: ns("agent/token-usage@", "llm-driver"),
  compactContext: ns("agent/compact-context@", "llm-driver"),
  renderInterruptedPartial: ns("agent/render-interrupted-partial@", "agent-reducer"),
  waitingClear: ns("agent/waiting-clear@", "agent-reducer"),
  renderWebResponse: ns("agent/render-web-response@", "agent-reducer"),
  transcribeError: ns("agent/transcribe-error@", "agent-reducer"),
  renderPreambleChange: ns("agent/render-preamble-change@", "agent-reducer"),
  renderScriptResult: ns("agent/render-script-result@", "agent-reducer"),
  runtimeChanged: ns("agent/runtime-changed@", "agent-reducer"),
  multiSnippetRejected: ns("agent/multi-snippet-rejected@", "agent-reducer"),
  malformedSnippetRejected: ns("agent/malformed-snippet-rejected@", "agent-reducer"),
  codemodeStatus: ns("agent/codemode-status@", "agent-reducer"),
  codemodeScriptRun: ns("agent/script-run-requested@", "agent-reducer"),
  codemodeProse: ns("agent/codemode-prose@", "agent-reducer"),
  birth: ns("agent/birth/", "web-gateway", "capability-host"),
  scriptCreatedAgent: ns("agent/created", "capability-host"),
  workerBirth: ns("worker/birth@", "agent-reducer"),
  scriptRunStarted: ns("capability-host/script-run-started@", "capability-host"),
  scriptRunSettled: ns("capability-host/script-run-settled@", "capability-host"),
  itxWebMessage: ns("capability-host/web-message@", "capability-host"),
  itxAgentAppend: ns("capability-host/agent-append@", "capability-host"),
  itxAgentMessage: ns("capability-host/agent-message@", "capability-host"),
} as const satisfies Record<string, KeyNamespace>;

export type KeyNamespaceName = keyof typeof RESERVED_KEY_NAMESPACES;

const k = (name: KeyNamespaceName, rest: string | number = ""): string => `${RESERVED_KEY_NAMESPACES[name].prefix}${rest}`;

/** The one builder per reserved namespace. */
export const idempotencyKeys = {
  request: (triggerOffset: number) => k("request", triggerOffset),
  pause: (triggerOffset: number) => k("pause", triggerOffset),
  resume: (triggerOffset: number) => k("resume", triggerOffset),
  settle: (requestOffset: number) => k("settle", requestOffset),
  expiryError: (requestOffset: number) => k("expiryError", requestOffset),
  failureError: (requestOffset: number) => k("failureError", requestOffset),
  assistantContext: (requestOffset: number) => k("assistantContext", requestOffset),
  tokenUsage: (requestOffset: number) => k("tokenUsage", requestOffset),
  compactContext: (reportOffset: number) => k("compactContext", reportOffset),
  renderInterruptedPartial: (requestOffset: number) => k("renderInterruptedPartial", requestOffset),
  waitingClear: (offset: number) => k("waitingClear", offset),
  renderWebResponse: (offset: number) => k("renderWebResponse", offset),
  transcribeError: (offset: number) => k("transcribeError", offset),
  renderPreambleChange: (offset: number) => k("renderPreambleChange", offset),
  renderScriptResult: (settledOffset: number) => k("renderScriptResult", settledOffset),
  runtimeChanged: (offset: number) => k("runtimeChanged", offset),
  multiSnippetRejected: (assistantOffset: number) => k("multiSnippetRejected", assistantOffset),
  malformedSnippetRejected: (assistantOffset: number) => k("malformedSnippetRejected", assistantOffset),
  codemodeStatus: (assistantOffset: number) => k("codemodeStatus", assistantOffset),
  codemodeScriptRun: (assistantOffset: number) => k("codemodeScriptRun", assistantOffset),
  codemodeProse: (assistantOffset: number) => k("codemodeProse", assistantOffset),
  /** `part`: `created`, `configured`, `boot-context` or `section/<key>`. */
  birth: (part: string) => k("birth", part),
  scriptCreatedAgent: () => k("scriptCreatedAgent"),
  workerBirth: (createdOffset: number, part: string) => k("workerBirth", `${createdOffset}/${part}`),
  scriptRunStarted: (executionId: string) => k("scriptRunStarted", executionId),
  scriptRunSettled: (executionId: string) => k("scriptRunSettled", executionId),
  // One key per itx call that appends: `<executionId>#<sequence of the call within the run>`.
  itxWebMessage: (executionId: string, sequence: number) => k("itxWebMessage", `${executionId}#${sequence}`),
  itxAgentAppend: (executionId: string, sequence: number) => k("itxAgentAppend", `${executionId}#${sequence}`),
  /**
   * A message lands on ANOTHER agent's stream, which other agents may message too, with run ids of
   * their own (`agent-output:<offset>` is the same in every agent): the key names the sender, as a
   * digest of its path (`sender`, the host's: 32 hex characters of its SHA-256), or one agent's
   * message would squat another's and be dropped as its duplicate.
   */
  itxAgentMessage: (sender: string, executionId: string, sequence: number) => k("itxAgentMessage", `${sender}:${executionId}#${sequence}`),
} as const satisfies Record<KeyNamespaceName, (...args: never[]) => string>;

/** The trigger offset a reducer request key names (`agent/request/<trigger>`), if it is one. */
export function triggerOffsetOfRequestKey(idempotencyKey: string | undefined): number | undefined {
  const prefix = RESERVED_KEY_NAMESPACES.request.prefix;
  if (idempotencyKey === undefined || !idempotencyKey.startsWith(prefix)) return undefined;
  const rest = idempotencyKey.slice(prefix.length);
  return /^\d+$/.test(rest) ? Number(rest) : undefined;
}

/** The reserved namespace a key falls in, or undefined when outside callers may use it. */
export function reservedKeyNamespaceOf(idempotencyKey: string): { name: KeyNamespaceName; namespace: KeyNamespace } | undefined {
  for (const [name, namespace] of Object.entries(RESERVED_KEY_NAMESPACES) as [KeyNamespaceName, KeyNamespace][]) {
    if (idempotencyKey.startsWith(namespace.prefix)) return { name, namespace };
  }
  return undefined;
}

/**
 * Keys that only ever travel in one batch with their request's settlement key, `agent/settle/R`
 * (contract: the settlement batches of the driver, and the reducer's expiry and interrupt): the
 * assistant context, the token usage, the failure and expiry errors, the interrupted partial.
 */
const RIDES_WITH_SETTLEMENT: readonly KeyNamespaceName[] = ["assistantContext", "tokenUsage", "failureError", "expiryError", "renderInterruptedPartial"];

/**
 * The key this key is only ever appended with, in the same batch: `agent/settle/R` for a key
 * that rides with request R's settlement, undefined for any other key. A keyed batch is
 * all-or-nothing, so such a key is on a stream at most once whenever its settlement key is:
 * a store need only check and reserve the settlement key (one key-index entry per settlement,
 * not three). Stores refuse a batch that carries a riding key without its settlement key.
 */
export function settlementKeyRiddenBy(idempotencyKey: string): string | undefined {
  for (const name of RIDES_WITH_SETTLEMENT) {
    const prefix = RESERVED_KEY_NAMESPACES[name].prefix;
    if (!idempotencyKey.startsWith(prefix)) continue;
    const rest = idempotencyKey.slice(prefix.length);
    return /^\d+$/.test(rest) ? idempotencyKeys.settle(Number(rest)) : undefined;
  }
  return undefined;
}
