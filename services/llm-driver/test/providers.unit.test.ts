import { describe, expect, it } from "vitest";
import { ProviderConfigError, ProviderNotConfiguredError } from "../src/errors.ts";
import { parseProvidersConfig, resolveProviders, routeModel } from "../src/providers.ts";

describe("provider routing", () => {
  const providers = parseProvidersConfig({
    openai: { baseUrl: "https://api.openai.com/v1", apiKey: "sk-x", promptCacheKey: true, api: "responses", models: { "gpt-5.6-terra": "gpt-5" } },
    ollama: { baseUrl: "http://127.0.0.1:11434/v1" },
  });

  it("routes by the prefix before the first slash and maps the model name", () => {
    expect(routeModel("openai/gpt-5.6-terra", providers)).toEqual({
      provider: "openai",
      baseUrl: "https://api.openai.com/v1",
      apiKey: "sk-x",
      remoteModel: "gpt-5",
      api: "responses",
      promptCacheKey: true,
    });
  });

  it("defaults to Chat Completions without prompt_cache_key, and keeps slashes after the first", () => {
    expect(routeModel("ollama/library/llama3:8b", providers)).toEqual({
      provider: "ollama",
      baseUrl: "http://127.0.0.1:11434/v1",
      apiKey: "not-needed",
      remoteModel: "library/llama3:8b",
      api: "chat",
      promptCacheKey: false,
    });
  });

  it("names the missing provider", () => {
    expect(() => routeModel("anthropic/claude", providers)).toThrow(ProviderNotConfiguredError);
    expect(() => routeModel("anthropic/claude", providers)).toThrow(/provider "anthropic", which is not configured \(configured: openai, ollama\)/);
    expect(() => routeModel("anthropic/claude", providers)).toThrow(expect.objectContaining({ code: "provider_not_configured", retryable: false }));
  });

  it("rejects bad provider config naming the field", () => {
    expect(() => parseProvidersConfig({ openai: { baseUrl: "not a url" } })).toThrow(ProviderConfigError);
    expect(() => parseProvidersConfig({ openai: { baseUrl: "not a url" } })).toThrow(/openai\.baseUrl/);
    expect(() => parseProvidersConfig({ openai: { baseUrl: "not a url" } })).toThrow(expect.objectContaining({ code: "invalid_config", retryable: false }));
    expect(() => parseProvidersConfig({ openai: { baseUrl: "http://x", api: "completions" } })).toThrow(/openai\.api/);
  });

  it("turns the OPENAI_* shorthand into an openai provider; nothing configured means offline", () => {
    expect(resolveProviders({})).toEqual({});
    expect(resolveProviders({ openaiApiKey: "sk-y" }).openai).toMatchObject({ baseUrl: "https://api.openai.com/v1", apiKey: "sk-y", promptCacheKey: true, api: "chat" });
    expect(resolveProviders({ openaiBaseUrl: "http://127.0.0.1:9999/v1" }).openai).toMatchObject({ promptCacheKey: false });
  });

  it("given OPENAI_MODEL with a local server, when the agents' default model is routed, then the server's own model is sent; names the provider maps still win", () => {
    const providers = resolveProviders({ openaiBaseUrl: "http://127.0.0.1:11434/v1", openaiModel: "llama3.1" });
    expect(routeModel("openai/gpt-5.6-terra", providers).remoteModel).toBe("llama3.1");
    expect(routeModel("openai/anything", providers).remoteModel).toBe("llama3.1");
    const mapped = parseProvidersConfig({ local: { baseUrl: "http://x", model: "qwen", models: { big: "qwen-72b" } } });
    expect([routeModel("local/big", mapped).remoteModel, routeModel("local/small", mapped).remoteModel]).toEqual(["qwen-72b", "qwen"]);
  });

  it("given OPENAI_MODEL without the shorthand, or beside LLM_PROVIDERS' own openai, then it is refused by name, not ignored", () => {
    expect(() => resolveProviders({ openaiModel: "llama3.1" })).toThrow("OPENAI_MODEL names the model of the OPENAI_BASE_URL / OPENAI_API_KEY provider: set one of them too");
    expect(() => resolveProviders({ providersJson: { openai: { baseUrl: "http://x" } }, openaiModel: "m" })).toThrow(/LLM_PROVIDERS has its own `openai`: set its `model` there/);
  });
});
