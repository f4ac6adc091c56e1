import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  CONTRACT_VERSION,
  ContractViolationError,
  DEFAULT_AGENT_CONFIG,
  EVENT_OWNERSHIP,
  EVENT_TYPES,
  allEventJsonSchemas,
  mergeAgentConfig,
  parseEventInput,
  parseStoredEvent,
  parseStreamPath,
  idempotencyKeys,
  settlementKeyRiddenBy,
} from "../src/index.ts";

const schemaDir = join(dirname(fileURLToPath(import.meta.url)), "..", "json-schema");

function violation(fn: () => unknown): ContractViolationError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ContractViolationError) return error;
    throw error;
  }
  throw new Error("expected a ContractViolationError");
}

describe("keys that ride with a settlement", () => {
  it("given a request's assistant context, usage, failure, expiry or interrupted-partial key, then it rides with that request's settlement key", () => {
    for (const key of [
      idempotencyKeys.assistantContext(7),
      idempotencyKeys.tokenUsage(7),
      idempotencyKeys.failureError(7),
      idempotencyKeys.expiryError(7),
      idempotencyKeys.renderInterruptedPartial(7),
    ]) {
      expect(settlementKeyRiddenBy(key)).toBe("agent/settle/7");
    }
  });

  it("given any other key, or a riding namespace without a request offset, then it rides with nothing", () => {
    for (const key of [idempotencyKeys.settle(7), idempotencyKeys.request(7), idempotencyKeys.codemodeProse(7), "agent/token-usage@x", "agent/token-usage@", "my-key"]) {
      expect(settlementKeyRiddenBy(key)).toBeUndefined();
    }
  });
});

describe("the contract", () => {
  it("is version 7.0.0", () => {
    expect(CONTRACT_VERSION).toBe("7.0.0");
  });

  it("has an ownership row for every event type", () => {
    expect(Object.keys(EVENT_OWNERSHIP).sort()).toEqual([...EVENT_TYPES].sort());
    expect(EVENT_OWNERSHIP["agent/llm-request-settled"].owner).toBe("llm-driver");
    expect(EVENT_OWNERSHIP["capability-host/script-run-settled"].owner).toBe("capability-host");
  });

  it("checks in a fresh JSON Schema file per event type with its events.iterate.com $id", () => {
    for (const { type, file, text } of allEventJsonSchemas()) {
      const onDisk = readFileSync(join(schemaDir, file), "utf8");
      expect(onDisk, `${file} is stale: run pnpm gen:schemas`).toBe(text);
      expect(JSON.parse(onDisk).$id).toBe(`events.iterate.com/${type}`);
    }
  });
});

describe("agent config", () => {
  it("has the contract's defaults", () => {
    expect(DEFAULT_AGENT_CONFIG).toEqual({
      llm: { model: "openai/gpt-5.6-terra" },
      llmRequestDebounceMs: 250,
      llmRequestExpiryMs: 600000,
      llmRequestRetryPolicy: { maxAttempts: 3, backoffBaseMs: 10000, backoffMaxMs: 60000 },
      maxAutonomousTurns: 100,
      scriptResultHistoryLimit: 30000,
      compactionTriggerFraction: 0.5,
      interpretResponses: true,
    });
  });

  it("deep-merges a partial, keeping omitted keys", () => {
    const merged = mergeAgentConfig(DEFAULT_AGENT_CONFIG, { llmRequestRetryPolicy: { maxAttempts: 5 }, interpretResponses: false });
    expect(merged?.llmRequestRetryPolicy).toEqual({ maxAttempts: 5, backoffBaseMs: 10000, backoffMaxMs: 60000 });
    expect(merged?.interpretResponses).toBe(false);
    expect(merged?.llm.model).toBe("openai/gpt-5.6-terra");
  });

  it("rejects unknown config keys at the boundary (strict partial)", () => {
    const error = violation(() => parseEventInput({ type: "agent/configured", payload: { config: { debounce: 5 } } }));
    expect(error.code).toBe("invalid_payload");
    expect(error.message).toContain("agent/configured");
    expect(error.issues[0]?.path).toBe("event.payload.config");
  });
});

describe("parseEventInput", () => {
  it("accepts every seed-shaped event", () => {
    const input = parseEventInput({
      type: "agents/context-added",
      payload: { role: "user", content: "hi", actor: { type: "user", origin: "web" } },
      idempotencyKey: "k1",
    });
    expect(input).toEqual({
      type: "agents/context-added",
      payload: { role: "user", content: "hi", actor: { type: "user", origin: "web" } },
      idempotencyKey: "k1",
    });
  });

  it("names the type, the field and the rule of an invalid payload", () => {
    const error = violation(() =>
      parseEventInput({ type: "agent/llm-request-settled", payload: { requestOffset: 0, result: { status: "succeeded" } } }, 2),
    );
    expect(error.code).toBe("invalid_payload");
    expect(error.message).toContain('"agent/llm-request-settled"');
    const paths = error.issues.map((i) => i.path);
    expect(paths).toContain("events[2].payload.requestOffset");
    expect(paths).toContain("events[2].payload.result.text");
  });

  it("rejects an unknown type", () => {
    expect(violation(() => parseEventInput({ type: "agent/exploded", payload: {} })).code).toBe("unknown_event_type");
  });

  it("rejects unknown envelope fields, naming each one", () => {
    const error = violation(() => parseEventInput({ type: "agent/created", payload: {}, offset: 3, streamPath: "/a" }, 4));
    expect(error.code).toBe("invalid_event");
    expect(error.issues.map((i) => i.path)).toEqual(["events[4].offset", "events[4].streamPath"]);
    expect(error.message).toContain('"offset", "streamPath"');
  });

  it("looks only at an input's own fields", () => {
    const inherited = Object.assign(Object.create({ offset: 3 }) as object, { type: "agents/context-added", payload: { role: "user", content: "hi" } });
    expect(parseEventInput(inherited).type).toBe("agents/context-added");
  });

  it("marks chunks ephemeral and rejects ephemeral:false on them", () => {
    const chunk = { type: "agent/llm-response-chunks", payload: { chunks: [{}], llmRequestOffset: 4, sequence: 0 } };
    expect(parseEventInput(chunk).ephemeral).toBe(true);
    expect(violation(() => parseEventInput({ ...chunk, ephemeral: false })).code).toBe("ephemeral_misuse");
    expect(violation(() => parseEventInput({ type: "agent/created", payload: {}, ephemeral: true })).code).toBe("ephemeral_misuse");
  });

  it("enforces the context-added compaction rules", () => {
    const error = violation(() =>
      parseEventInput({ type: "agents/context-added", payload: { role: "user", content: "x", compaction: { replacesHistoryThrough: 3 } } }),
    );
    expect(error.issues.map((i) => i.path)).toEqual(["event.payload.role", "event.payload.llmRequestPolicy"]);
  });

  it("enforces the context-rewritten rules", () => {
    expect(() => parseEventInput({ type: "agents/context-rewritten", payload: { op: "replace", key: "a" } })).toThrow(/replace needs content/);
    expect(() => parseEventInput({ type: "agents/context-rewritten", payload: { op: "replace", key: "*", content: "x" } })).toThrow(/may not use key/);
    expect(() => parseEventInput({ type: "agents/context-rewritten", payload: { op: "delete", key: "a", content: "x" } })).toThrow(/no content/);
    expect(parseEventInput({ type: "agents/context-rewritten", payload: { op: "delete", key: "*" } }).type).toBe("agents/context-rewritten");
  });

  it("enforces summary lengths after trimming and the conditional clear", () => {
    expect(() => parseEventInput({ type: "agent/summary-updated", payload: { title: "   " } })).toThrow(/1–120/);
    expect(() => parseEventInput({ type: "agent/summary-updated", payload: {} })).toThrow();
    expect(parseEventInput({ type: "agent/summary-updated", payload: { waitingFor: null, clearWaitingForThroughOffset: 9 } }).payload).toEqual({
      waitingFor: null,
      clearWaitingForThroughOffset: 9,
    });
  });
});

describe("stream paths", () => {
  it.each(["/agents/web/demo", "/a", "/A_b-9/x"])("accepts %s", (path) => {
    expect(parseStreamPath(path)).toBe(path);
  });
  it.each(["", "agents", "/", "/a//b", "/a/", "/a b", "/a.b", "/ä", "/a/*", "/a/>"])("rejects %j", (path) => {
    expect(violation(() => parseStreamPath(path)).code).toBe("invalid_stream_path");
  });
});

describe("parseStoredEvent", () => {
  it("skips, never throws, on unknown or invalid events", () => {
    expect(parseStoredEvent({ streamPath: "/a", offset: 1, createdAt: "2026-01-01T00:00:00.000Z", type: "future/thing", payload: {} }).ok).toBe(false);
    expect(parseStoredEvent(null).ok).toBe(false);
    const ok = parseStoredEvent({ streamPath: "/a", offset: 1, createdAt: "2026-01-01T00:00:00.000Z", type: "agent/created", payload: { by: "x" } });
    expect(ok).toEqual({ ok: true, event: { streamPath: "/a", offset: 1, createdAt: "2026-01-01T00:00:00.000Z", type: "agent/created", payload: { by: "x" } } });
  });
});

describe("the live lane", () => {
  it("lets agent/runtime-changed ride the live lane when asked, and stay durable otherwise", () => {
    const runtime = {
      type: "agent/runtime-changed",
      payload: { runtime: { triggers: { pending: 1, runnable: 0 }, llmRequests: { requested: 0 }, runningScripts: 0 }, sinceOffset: 3, since: "2026-01-01T00:00:00.000Z" },
    };
    expect(parseEventInput({ ...runtime, ephemeral: true }).ephemeral).toBe(true);
    expect(parseEventInput(runtime).ephemeral).toBeUndefined();
  });
});
