// Provider routing: a model name like `openai/gpt-5.6-terra` names its provider before the
// first slash. Each provider is an OpenAI-compatible endpoint (OpenAI, OpenRouter, Ollama,
// vLLM, llama.cpp…) with its own base URL, key, optional model-name mapping, API dialect and
// whether it accepts `prompt_cache_key`.

import { z } from "zod";
import { ProviderConfigError, ProviderNotConfiguredError } from "./errors.ts";

export const providerConfigSchema = z.strictObject({
  baseUrl: z.url(),
  apiKey: z.string().optional(),
  /** Model names after the provider prefix mapped to the provider's own names. */
  models: z.record(z.string(), z.string().min(1)).optional(),
  /**
   * The provider's own name for every model routed here that `models` does not map: a local
   * server (Ollama, vLLM) serves the one model it has loaded, and refused the agents' default
   * name ("model gpt-5.6-terra not found").
   */
  model: z.string().min(1).optional(),
  api: z.enum(["chat", "responses"]).default("chat"),
  /** Send `prompt_cache_key` = the stream path (OpenAI accepts it; many others reject unknown fields). */
  promptCacheKey: z.boolean().default(false),
});

export const providersConfigSchema = z.record(z.string().regex(/^[A-Za-z0-9._-]+$/, "provider names are [A-Za-z0-9._-]+"), providerConfigSchema);

export type ProviderConfig = z.infer<typeof providerConfigSchema>;
export type ProvidersConfig = z.infer<typeof providersConfigSchema>;

export interface ModelRoute {
  readonly provider: string;
  readonly baseUrl: string;
  readonly apiKey: string;
  /** The name sent to the provider. */
  readonly remoteModel: string;
  readonly api: "chat" | "responses";
  readonly promptCacheKey: boolean;
}

/** Parses provider JSON; errors name the provider and field. */
export function parseProvidersConfig(json: unknown): ProvidersConfig {
  const parsed = providersConfigSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
  throw new ProviderConfigError(`LLM_PROVIDERS is invalid: ${problems.join("; ")}`);
}

/**
 * The providers to use: `LLM_PROVIDERS` (JSON, or read from a file by the caller) plus the
 * `OPENAI_BASE_URL` / `OPENAI_API_KEY` shorthand for an `openai` provider. Empty → offline.
 */
export function resolveProviders(input: { providersJson?: unknown; openaiBaseUrl?: string; openaiApiKey?: string; openaiModel?: string }): ProvidersConfig {
  const providers: ProvidersConfig = input.providersJson === undefined ? {} : { ...parseProvidersConfig(input.providersJson) };
  if (providers.openai === undefined && (input.openaiApiKey !== undefined || input.openaiBaseUrl !== undefined)) {
    providers.openai = providerConfigSchema.parse({
      baseUrl: input.openaiBaseUrl ?? "https://api.openai.com/v1",
      apiKey: input.openaiApiKey,
      // Only OpenAI's own endpoint is known to accept the cache key.
      promptCacheKey: input.openaiBaseUrl === undefined || input.openaiBaseUrl.startsWith("https://api.openai.com"),
      ...(input.openaiModel === undefined ? {} : { model: input.openaiModel }),
    });
  } else if (input.openaiModel !== undefined) {
    throw new ProviderConfigError(
      providers.openai === undefined ? "OPENAI_MODEL names the model of the OPENAI_BASE_URL / OPENAI_API_KEY provider: set one of them too" : "OPENAI_MODEL is for the OPENAI_BASE_URL / OPENAI_API_KEY shorthand; LLM_PROVIDERS has its own `openai`: set its `model` there",
    );
  }
  return providers;
}

/** The provider a model name routes to: the part before its first `/`, or `default`. */
export function providerOfModel(model: string): string {
  const slash = model.indexOf("/");
  return slash === -1 ? "default" : model.slice(0, slash);
}

export function routeModel(model: string, providers: ProvidersConfig): ModelRoute {
  const slash = model.indexOf("/");
  const providerName = providerOfModel(model);
  const localName = slash === -1 ? model : model.slice(slash + 1);
  const provider = providers[providerName];
  if (provider === undefined) throw new ProviderNotConfiguredError(model, Object.keys(providers));
  return {
    provider: providerName,
    baseUrl: provider.baseUrl,
    // Local servers (Ollama, llama.cpp) take any key; the client insists on a string.
    apiKey: provider.apiKey ?? "not-needed",
    remoteModel: provider.models?.[localName] ?? provider.models?.[model] ?? provider.model ?? localName,
    api: provider.api,
    promptCacheKey: provider.promptCacheKey,
  };
}
