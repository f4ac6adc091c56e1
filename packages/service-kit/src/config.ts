// Service configuration comes from the environment and is parsed with zod at start-up; a bad
// value fails fast with the variable's name and the rule it broke.

import type { z } from "zod";
import { AgentRuntimeError } from "@agentrt/contract";

export class ConfigError extends AgentRuntimeError {
  constructor(message: string, details: Record<string, unknown>) {
    super("invalid_config", message, { details, retryable: false });
  }
}

/**
 * Parses `env` with a schema whose keys are environment variable names. Empty strings count as
 * unset so `FOO= service` falls back to the default.
 */
export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const result = schema.safeParse(cleaned);
  if (result.success) return result.data;
  throw invalidConfig(result.error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`));
}

/** The error for configuration problems, each `<VARIABLE>: <rule it broke>` (also for rules across variables). */
export function invalidConfig(problems: readonly string[]): ConfigError {
  return new ConfigError(`Invalid configuration: ${problems.join("; ")}`, { problems });
}
