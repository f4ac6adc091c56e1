// The reducer's environment: REDUCER_LLM_DRIVER chooses how requests reach a driver, and a
// driver run in the reducer's process needs its own NATS user whenever users are on.

import { describe, expect, it } from "vitest";
import { inProcessDriverConfig, loadReducerConfig } from "../src/config.ts";

describe("REDUCER_LLM_DRIVER", () => {
  it("given nothing, when the config loads, then requests go through the work queue", () => {
    expect(loadReducerConfig({}).REDUCER_LLM_DRIVER).toBe("queue");
  });

  it("given in-process without NATS users, when the config loads, then it is accepted", () => {
    expect(loadReducerConfig({ REDUCER_LLM_DRIVER: "in-process" }).REDUCER_LLM_DRIVER).toBe("in-process");
  });

  it("given in-process with the reducer's NATS user but none for the driver, when the config loads, then it fails naming LLM_DRIVER_NATS_USER and why", () => {
    expect(() => loadReducerConfig({ REDUCER_LLM_DRIVER: "in-process", NATS_USER: "agent-reducer", NATS_PASSWORD: "p" })).toThrow(
      /LLM_DRIVER_NATS_USER: .*the reducer's may not write a driver's events/,
    );
  });

  it("given in-process with both users, when the config loads, then the driver's user is kept", () => {
    const config = loadReducerConfig({ REDUCER_LLM_DRIVER: "in-process", NATS_USER: "agent-reducer", NATS_PASSWORD: "p", LLM_DRIVER_NATS_USER: "llm-driver", LLM_DRIVER_NATS_PASSWORD: "q" });
    expect([config.LLM_DRIVER_NATS_USER, config.LLM_DRIVER_NATS_PASSWORD]).toEqual(["llm-driver", "q"]);
  });

  it("given an unknown value, when the config loads, then it fails naming REDUCER_LLM_DRIVER", () => {
    expect(() => loadReducerConfig({ REDUCER_LLM_DRIVER: "both" })).toThrow(/REDUCER_LLM_DRIVER/);
  });
});

describe("the in-process driver's config", () => {
  it("given queue, when the driver's config is asked for, then there is none", () => {
    expect(inProcessDriverConfig(loadReducerConfig({}), {})).toBeUndefined();
  });

  it("given in-process with both users, when the driver's config is built, then it reads the driver's variables and connects as the driver's user", () => {
    const env = { REDUCER_LLM_DRIVER: "in-process", NATS_USER: "agent-reducer", NATS_PASSWORD: "p", LLM_DRIVER_NATS_USER: "llm-driver", LLM_DRIVER_NATS_PASSWORD: "q", LLM_CONCURRENCY: "7" };
    const driver = inProcessDriverConfig(loadReducerConfig(env), env);
    expect([driver?.NATS_USER, driver?.NATS_PASSWORD, driver?.LLM_CONCURRENCY]).toEqual(["llm-driver", "q", 7]);
  });

  it("given in-process with a driver variable it refuses, when the driver's config is built, then it fails naming that variable", () => {
    const env = { REDUCER_LLM_DRIVER: "in-process", LLM_CONCURRENCY: "zero" };
    expect(() => inProcessDriverConfig(loadReducerConfig(env), env)).toThrow(/LLM_CONCURRENCY/);
  });
});
