// The agent configuration: defaults, the strict partial that `agent/configured` carries, and
// the deep merge that folds one into the other. The merged result is validated whole.

import { z } from "zod";

export const CONTRACT_VERSION = "7.0.0" as const;

const nonNegativeInt = z.number().int().nonnegative();

export const retryPolicySchema = z.strictObject({
  maxAttempts: z.number().int().min(1),
  backoffBaseMs: nonNegativeInt,
  backoffMaxMs: nonNegativeInt,
});

export const agentConfigSchema = z.strictObject({
  llm: z.strictObject({ model: z.string().min(1) }),
  llmRequestDebounceMs: nonNegativeInt,
  llmRequestExpiryMs: z.number().int().positive(),
  llmRequestRetryPolicy: retryPolicySchema,
  maxAutonomousTurns: z.number().int().min(1),
  scriptResultHistoryLimit: z.number().int().min(1),
  compactionTriggerFraction: z.number().gt(0).max(1),
  interpretResponses: z.boolean(),
});

export type AgentConfig = z.infer<typeof agentConfigSchema>;

export const DEFAULT_AGENT_CONFIG: AgentConfig = Object.freeze({
  llm: Object.freeze({ model: "openai/gpt-5.6-terra" }),
  llmRequestDebounceMs: 250,
  llmRequestExpiryMs: 600_000,
  llmRequestRetryPolicy: Object.freeze({ maxAttempts: 3, backoffBaseMs: 10_000, backoffMaxMs: 60_000 }),
  maxAutonomousTurns: 100,
  scriptResultHistoryLimit: 30_000,
  compactionTriggerFraction: 0.5,
  interpretResponses: true,
}) as AgentConfig;

/** The strict partial of `agent/configured`: every key optional, nested objects partial too. */
export const agentConfigPatchSchema = z.strictObject({
  llm: agentConfigSchema.shape.llm.partial().optional(),
  llmRequestDebounceMs: agentConfigSchema.shape.llmRequestDebounceMs.optional(),
  llmRequestExpiryMs: agentConfigSchema.shape.llmRequestExpiryMs.optional(),
  llmRequestRetryPolicy: retryPolicySchema.partial().optional(),
  maxAutonomousTurns: agentConfigSchema.shape.maxAutonomousTurns.optional(),
  scriptResultHistoryLimit: agentConfigSchema.shape.scriptResultHistoryLimit.optional(),
  compactionTriggerFraction: agentConfigSchema.shape.compactionTriggerFraction.optional(),
  interpretResponses: agentConfigSchema.shape.interpretResponses.optional(),
});

export type AgentConfigPatch = z.infer<typeof agentConfigPatchSchema>;

/**
 * Deep-merges a patch into a config. Returns the merged config, or null when the merged
 * result is not a valid config (the caller keeps the previous one).
 */
export function mergeAgentConfig(current: AgentConfig, patch: AgentConfigPatch): AgentConfig | null {
  const merged = {
    ...current,
    ...stripUndefined(patch),
    llm: { ...current.llm, ...stripUndefined(patch.llm ?? {}) },
    llmRequestRetryPolicy: { ...current.llmRequestRetryPolicy, ...stripUndefined(patch.llmRequestRetryPolicy ?? {}) },
  };
  const parsed = agentConfigSchema.safeParse(merged);
  return parsed.success ? parsed.data : null;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
