// A bad environment is a terminal `invalid_config` naming the variable, not a payload error.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentRuntimeError } from "@agentrt/contract";
import { ConfigError, loadConfig } from "../src/index.ts";

describe("loadConfig", () => {
  const schema = z.object({ OPS_PORT: z.coerce.number().int().min(1), LOG_LEVEL: z.string().default("info") });

  it("parses the environment, an empty string counting as unset", () => {
    expect(loadConfig(schema, { OPS_PORT: "9464", LOG_LEVEL: "" })).toEqual({ OPS_PORT: 9464, LOG_LEVEL: "info" });
  });

  it("fails with a terminal invalid_config error that names the variable", () => {
    let thrown: unknown;
    try {
      loadConfig(schema, { OPS_PORT: "zero" });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect(thrown).toBeInstanceOf(AgentRuntimeError);
    expect(thrown).toMatchObject({ code: "invalid_config", retryable: false, message: expect.stringContaining("OPS_PORT") });
  });
});
