// One zod schema per event payload, with the exact field names of contract.md. The
// TypeScript payload types are `z.infer` of these; nothing is declared twice.

import { z } from "zod";
import { CONTRACT_VERSION, agentConfigPatchSchema } from "./config.ts";
import { agentGrantSchema, requesterSchema } from "./grant.ts";

const offset = z.number().int().positive();
const count = z.number().int().nonnegative();
const isoTimestamp = z.iso.datetime({ offset: true });

// --- shared shapes ---------------------------------------------------------------------

export const fileAttachmentSchema = z.strictObject({
  contentType: z.string(),
  filename: z.string(),
  path: z.string(),
  size: count,
  url: z.string(),
});

export const refSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("event"), streamPath: z.string(), offset, eventType: z.string().optional() }),
  z.strictObject({ type: z.literal("user"), userId: z.string() }),
  z.strictObject({ type: z.literal("file"), path: z.string() }),
  z.strictObject({ type: z.literal("git-commit"), repoPath: z.string(), commitOid: z.string() }),
  z.strictObject({ type: z.literal("repo-file"), repoPath: z.string(), path: z.string() }),
]);

export const actorSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("user"), origin: z.enum(["web", "mcp"]), userId: z.string().optional() }),
  z.strictObject({ type: z.literal("agent"), path: z.string() }),
  z.strictObject({ type: z.literal("script"), executionId: z.string() }),
  z.strictObject({ type: z.literal("integration"), name: z.string() }),
  z.strictObject({ type: z.literal("slack"), userId: z.string().optional(), botName: z.string().optional() }),
  z.strictObject({ type: z.literal("telegram"), userId: z.string().optional(), username: z.string().optional() }),
  z.strictObject({ type: z.literal("email"), address: z.string().optional(), name: z.string().optional() }),
  z.strictObject({ type: z.literal("github"), login: z.string().optional(), senderType: z.string().optional() }),
]);

export const llmRequestPolicySchema = z.strictObject({
  behaviour: z.enum(["after-current-request", "interrupt-current-request", "dont-trigger-request"]),
});

export type FileAttachment = z.infer<typeof fileAttachmentSchema>;
export type Ref = z.infer<typeof refSchema>;
export type Actor = z.infer<typeof actorSchema>;
export type LlmRequestPolicy = z.infer<typeof llmRequestPolicySchema>;

// --- agent/* ---------------------------------------------------------------------------

// `grant` (optional): prefixes this agent's scripts may touch beyond its own subtree (grant.ts).
export const agentCreatedSchema = z.looseObject({ grant: agentGrantSchema.optional() });

export const agentConfiguredSchema = z.strictObject({ config: agentConfigPatchSchema, grant: agentGrantSchema.optional() });

export const agentBindingSetSchema = z.looseObject({
  type: z.string().min(1),
  connection: z.string(),
  channelId: z.string().optional(),
  threadTs: z.string().optional(),
  channelName: z.string().optional(),
  url: z.string().optional(),
});

export const llmRequestRequestedSchema = z.strictObject({
  model: z.string().min(1),
  expiresAt: isoTimestamp,
  contractVersion: z.literal(CONTRACT_VERSION).optional(),
});

export const llmUsageSchema = z.record(z.string(), z.unknown());

export const llmRequestResultSchema = z.discriminatedUnion("status", [
  z.strictObject({ status: z.literal("succeeded"), text: z.string(), usage: llmUsageSchema.optional(), rawResponse: z.unknown().optional() }),
  z.strictObject({ status: z.literal("failed"), errorMessage: z.string(), rawResponse: z.unknown().optional() }),
  z.strictObject({
    status: z.literal("cancelled"),
    reason: z.enum(["interrupted-by-user-input", "expired"]),
    partialText: z.string().optional(),
  }),
]);

export const llmRequestSettledSchema = z.strictObject({
  requestOffset: offset,
  durationMs: z.number().nonnegative().optional(),
  result: llmRequestResultSchema,
});

export const llmResponseChunksSchema = z.strictObject({
  chunks: z.array(z.unknown()).min(1),
  llmRequestOffset: offset,
  sequence: count,
});

export const tokenUsageReportedSchema = z.strictObject({
  llmRequestOffset: offset,
  model: z.string().min(1),
  maxContextTokens: z.number().int().positive(),
  inputTokens: count,
  outputTokens: count,
  cachedInputTokens: count.optional(),
  reasoningOutputTokens: count.optional(),
});

const trimmedText = (min: number, max: number) =>
  z.string().refine((s) => s.trim().length >= min && s.trim().length <= max, {
    message: `must be ${min}–${max} characters after trimming`,
  });

export const waitingForSchema = z.enum(["user_input", "external_event", "timer"]);

export const summaryConditionalClearSchema = z.strictObject({
  waitingFor: z.null(),
  clearWaitingForThroughOffset: offset,
});

export const summaryPartialSchema = z
  .strictObject({
    title: trimmedText(1, 120).nullable().optional(),
    description: trimmedText(1, 600).nullable().optional(),
    activity: trimmedText(1, 240).nullable().optional(),
    waitingFor: waitingForSchema.nullable().optional(),
    pinned: z.boolean().nullable().optional(),
  })
  .refine((value) => Object.keys(value).length > 0, { message: "a summary update needs at least one field" });

export const summaryUpdatedSchema = z.union([summaryConditionalClearSchema, summaryPartialSchema]);

export const agentPausedSchema = z.strictObject({ reason: z.string().optional(), triggerOffset: offset.optional() });
export const agentResumedSchema = z.strictObject({ reason: z.string().optional() });

export const agentRuntimeSchema = z.strictObject({
  triggers: z.strictObject({ pending: count, runnable: count }),
  llmRequests: z.strictObject({ requested: z.union([z.literal(0), z.literal(1)]) }),
  runningScripts: count,
});

export const runtimeChangedSchema = z.strictObject({
  runtime: agentRuntimeSchema,
  sinceOffset: count,
  since: isoTimestamp,
});

// --- agents/* --------------------------------------------------------------------------

export const contextAddedSchema = z
  .strictObject({
    role: z.enum(["system", "developer", "user", "assistant"]),
    content: z.string(),
    key: z.string().min(1).optional(),
    files: z.array(fileAttachmentSchema).optional(),
    refs: z.array(refSchema).optional(),
    actor: actorSchema.optional(),
    llmRequestPolicy: llmRequestPolicySchema.optional(),
    llmRequestOffset: offset.optional(),
    compaction: z.strictObject({ replacesHistoryThrough: offset, usage: z.unknown().optional() }).optional(),
    mentions: z.array(z.unknown()).optional(),
    mentionResolution: z.unknown().optional(),
  })
  .superRefine((value, ctx) => {
    if (value.compaction === undefined) return;
    if (value.role !== "developer") {
      ctx.addIssue({ code: "custom", path: ["role"], message: "a compaction item must have role developer" });
    }
    if (value.key !== undefined) {
      ctx.addIssue({ code: "custom", path: ["key"], message: "a compaction item is never keyed" });
    }
    if (value.llmRequestPolicy?.behaviour !== "dont-trigger-request") {
      ctx.addIssue({
        code: "custom",
        path: ["llmRequestPolicy"],
        message: 'a compaction item must use llmRequestPolicy {behaviour: "dont-trigger-request"}',
      });
    }
  });

export const contextRewrittenSchema = z
  .strictObject({ op: z.enum(["replace", "delete"]), key: z.string().min(1), content: z.string().optional() })
  .superRefine((value, ctx) => {
    if (value.op === "replace" && value.content === undefined) {
      ctx.addIssue({ code: "custom", path: ["content"], message: "replace needs content" });
    }
    if (value.op === "replace" && value.key === "*") {
      ctx.addIssue({ code: "custom", path: ["key"], message: 'replace may not use key "*"' });
    }
    if (value.op === "delete" && value.content !== undefined) {
      ctx.addIssue({ code: "custom", path: ["content"], message: "delete carries no content" });
    }
  });

export const webMessageSentSchema = z.strictObject({
  message: z.string(),
  files: z.array(fileAttachmentSchema).optional(),
  llmRequestOffset: offset.optional(),
});

// --- capability-host/* -----------------------------------------------------------------

export const scriptRunRequestedSchema = z.strictObject({
  code: z.string(),
  executionId: z.string().min(1),
  expiresAt: isoTimestamp,
  /** Stamped by the gateway on API-requested scripts: the requesting key's scopes (grant.ts). */
  requester: requesterSchema.optional(),
});

export const scriptRunStartedSchema = z.strictObject({ executionId: z.string().min(1) });

export const scriptFailureKindSchema = z.enum(["typecheck", "runtime", "deadline", "expired", "orphaned"]);
export const scriptPhaseSchema = z.enum(["typecheck", "before-execution", "execution", "recovery"]);

export const scriptSettlementSchema = z.discriminatedUnion("status", [
  z.strictObject({
    status: z.literal("succeeded"),
    result: z.unknown().optional(),
    oversized: z
      .strictObject({ kind: z.literal("omitted"), serializedChars: count, preview: z.string(), typeText: z.string() })
      .optional(),
  }),
  z.strictObject({
    status: z.literal("failed"),
    error: z.string(),
    failureKind: scriptFailureKindSchema,
    phase: scriptPhaseSchema,
    executionMayHaveOccurred: z.boolean(),
    cancellation: z.enum(["not-applicable", "external-work-may-continue"]),
  }),
]);

export const scriptRunSettledSchema = z.strictObject({
  executionId: z.string().min(1),
  settlement: scriptSettlementSchema,
});

export const preambleSetSchema = z.strictObject({ key: z.string().min(1), code: z.string() });
export const preambleRemovedSchema = z.strictObject({ key: z.string().min(1) });

// --- stream/* --------------------------------------------------------------------------

export const streamErrorOccurredSchema = z.strictObject({
  message: z.string().min(1),
  error: z
    .strictObject({ name: z.string().optional(), message: z.string(), code: z.string().optional(), stack: z.string().optional() })
    .optional(),
});

// --- live lane (ephemeral, never stored) -----------------------------------------------

export const messageDeltaSchema = z.strictObject({ llmRequestOffset: offset, text: z.string() });
export const scriptDeltaSchema = z.strictObject({ llmRequestOffset: offset, code: z.string(), status: z.string().optional() });
