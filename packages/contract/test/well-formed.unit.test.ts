import { describe, expect, it } from "vitest";
import { ContractViolationError, mendIllFormedText, parseEventInput, parseStoredEvent, textHead } from "../src/index.ts";

function refusal(raw: unknown, index?: number): ContractViolationError {
  try {
    parseEventInput(raw, index);
  } catch (error) {
    if (error instanceof ContractViolationError) return error;
    throw error;
  }
  throw new Error("expected a ContractViolationError");
}

const userSays = (content: string) => ({ type: "agents/context-added", payload: { role: "user", content } });

describe("well-formed text in events", () => {
  it("given a lone surrogate in a payload's string, when an input is parsed, then it is refused naming the path and the rule", () => {
    const error = refusal(userSays("before \ud800 after"), 3);
    expect(error.code).toBe("invalid_payload");
    expect(error.issues).toEqual([{ path: "events[3].payload.content", message: "not well-formed Unicode (a lone surrogate)" }]);
    expect(error.message).toBe("events[3].payload.content holds text that is not well-formed Unicode (a lone surrogate such as \\ud800); send whole characters.");
    expect(error.details).toMatchObject({ type: "agents/context-added", index: 3 });
  });

  it("given a low surrogate alone, deep in an array, or in a key, when parsed, then each is refused where it is", () => {
    expect(refusal(userSays("\udc00x")).issues[0]?.path).toBe("event.payload.content");
    const chunks = (chunks: unknown[]) => ({ type: "agent/llm-response-chunks", payload: { llmRequestOffset: 2, sequence: 0, chunks } });
    expect(refusal(chunks(["ok", { delta: ["fine", "bad \udbff"] }])).issues[0]?.path).toBe("event.payload.chunks[1].delta[1]");
    expect(refusal(chunks([{ ["k\udfff"]: 1 }])).issues[0]?.path).toBe("event.payload.chunks[0].k\\udfff");
  });

  it("given a lone surrogate in the idempotency key, when parsed, then the key is named", () => {
    const error = refusal({ ...userSays("hi"), idempotencyKey: "key-\ud800" });
    expect(error.issues[0]?.path).toBe("event.idempotencyKey");
  });

  it("given whole characters, astral ones and pairs included, when parsed, then they pass unchanged", () => {
    const text = "emoji 😀 𝄞 and 中文, a pair \ud83d\ude00";
    expect(parseEventInput(userSays(text)).payload).toMatchObject({ content: text });
  });

  it("given a record stored before the rule, when read back, then it is still read (a new rule never hides what is stored)", () => {
    const stored = parseStoredEvent({ streamPath: "/agents/a", offset: 1, createdAt: "2026-12-07T00:00:00.000Z", ...userSays("old \ud800") });
    expect(stored.ok).toBe(true);
  });
});

describe("mendIllFormedText", () => {
  it("given well-formed values, when mended, then the very same value comes back (nothing copied)", () => {
    const value = { a: ["x", 1, null, { b: "😀" }] };
    expect(mendIllFormedText(value)).toBe(value);
  });

  it("given lone surrogates in strings and keys at any depth, when mended, then each becomes U+FFFD and the rest is kept", () => {
    const value = { text: "a\ud800b", list: [1, "\udc00", { ["k\ud800"]: "ok 😀" }], keep: true };
    expect(mendIllFormedText(value)).toEqual({ text: "a\ufffdb", list: [1, "\ufffd", { ["k\ufffd"]: "ok 😀" }], keep: true });
    expect(value.text).toBe("a\ud800b");
  });

  it("given a parsed \"__proto__\" key beside a lone surrogate, when mended, then it stays an own key and no prototype is set", () => {
    const value = JSON.parse('{"__proto__":{"polluted":1},"x":"\\ud800"}') as Record<string, unknown>;
    const out = mendIllFormedText(value);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect((out as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":1},"x":"\ufffd"}');
  });

  it("given a mended event input, when parsed, then the contract accepts it", () => {
    expect(parseEventInput(mendIllFormedText(userSays("x\ud800"))).payload).toMatchObject({ content: "x\ufffd" });
  });
});

describe("textHead", () => {
  it("given a cut inside a surrogate pair, when the head is taken, then the pair goes whole, never half of it", () => {
    expect(textHead("ab😀c", 3)).toBe("ab");
    expect(textHead("ab😀c", 4)).toBe("ab😀");
  });

  it("given text within the bound, or a bound of nothing, when the head is taken, then it is the text, or nothing", () => {
    expect(textHead("abc", 3)).toBe("abc");
    expect(textHead("abc", 10)).toBe("abc");
    expect(textHead("abc", 0)).toBe("");
    expect(textHead("abc", -1)).toBe("");
  });
});
