// The pure parts of the gateway's input hardening: request targets, JSON depth, URL
// sanitising for logs, and the per-key live-subscription cap.
import { describe, expect, it } from "vitest";
import { GatewayError } from "../src/errors.ts";
import { isUtf8 } from "node:buffer";
import { firstNonUtf8Byte } from "../src/http/body.ts";
import { jsonDepthExceeds, parseJsonBounded } from "../src/http/json-limits.ts";
import { LiveSubscriptionLimiter } from "../src/http/live-limits.ts";
import { sanitizeUrl } from "../src/http/redact.ts";
import { MAX_REQUEST_TARGET_CHARS, parseRequestTarget } from "../src/http/request-target.ts";
import { singleValuedQuery } from "../src/http/pipeline.ts";
import { DEV_PRINCIPAL } from "../src/auth/authenticator.ts";
import { asciiJson } from "../src/grpc/server.ts";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    return error instanceof GatewayError ? error.code : `not a GatewayError: ${String(error)}`;
  }
}

describe("parseRequestTarget", () => {
  it("splits a normal target into the raw path and the query", () => {
    const t = parseRequestTarget("/v1/streams/%2Fagents%2Fa/events?fromOffset=2#frag");
    expect(t.pathname).toBe("/v1/streams/%2Fagents%2Fa/events");
    expect(t.query.get("fromOffset")).toBe("2");
  });
  it("keeps `//x/y` a path instead of resolving another host", () => {
    expect(parseRequestTarget("//evil/v1/agents").pathname).toBe("//evil/v1/agents");
  });
  for (const bad of ["/%", "/%E0%A4%A", "/a%00b", "/a\u0000b", "*", "http://evil/v1/agents", "/\\evil", `/${"a".repeat(MAX_REQUEST_TARGET_CHARS)}`]) {
    it(`refuses ${JSON.stringify(bad.slice(0, 30))} with a 400`, () => {
      expect(codeOf(() => parseRequestTarget(bad))).toBe("invalid_request");
    });
  }
});

describe("singleValuedQuery", () => {
  it("given each name once, when read, then one value per name, `__proto__` an own property like any other", () => {
    const query = singleValuedQuery(new URLSearchParams("fromOffset=2&limit=5&__proto__=x"));
    expect(query).toEqual({ fromOffset: "2", limit: "5", ["__proto__"]: "x" });
    expect(Object.getPrototypeOf(query)).toBe(Object.prototype);
  });
  it("given a control character in a value, raw or encoded, when read, then a 400 naming the parameter, as in the path", () => {
    for (const raw of ["after=%2Fagents%2Fa%00", "prefix=%2Fa%0A", "after=%2Fa%7F"]) {
      let caught: unknown;
      try {
        singleValuedQuery(new URLSearchParams(raw));
      } catch (error) {
        caught = error;
      }
      expect(caught, raw).toBeInstanceOf(GatewayError);
      expect((caught as GatewayError).code).toBe("invalid_request");
      expect((caught as GatewayError).details.issues).toEqual([{ path: `query.${raw.split("=")[0]}`, message: "control characters (such as %00) are not allowed" }]);
    }
    expect(singleValuedQuery(new URLSearchParams("after=%2Fagents%2Fa%C3%A9"))).toEqual({ after: "/agents/aé" });
  });
  it("given a name twice, when read, then a 400 naming each repeated name and its count", () => {
    let caught: unknown;
    try {
      singleValuedQuery(new URLSearchParams("a=1&b=2&a=3&b=4&b=5&c=6"));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(GatewayError);
    expect((caught as GatewayError).code).toBe("invalid_request");
    expect((caught as GatewayError).details.issues).toEqual([
      { path: "query.a", message: "given 2 times; give it once" },
      { path: "query.b", message: "given 3 times; give it once" },
    ]);
  });
});

/** The 400 a body is refused with (the test fails if it is taken). */
function refused(text: string): GatewayError {
  try {
    parseJsonBounded(text, 64, "The request body");
  } catch (error) {
    return error as GatewayError;
  }
  throw new Error(`${text} was accepted`);
}

describe("JSON depth", () => {
  it("counts nesting, not brackets inside strings", () => {
    expect(jsonDepthExceeds('{"a":"[[[[[[[[[[","b":["\\"[[["]}', 2)).toBe(false);
    expect(jsonDepthExceeds("[[[]]]", 2)).toBe(true);
  });
  it("given 5000 levels, when parsed with a limit of 64, then a 400 names the limit", () => {
    const text = `${"[".repeat(5000)}${"]".repeat(5000)}`;
    try {
      parseJsonBounded(text, 64, "The request body");
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(GatewayError);
      expect((error as GatewayError).code).toBe("invalid_request");
      expect((error as GatewayError).message).toMatch(/limit of 64 levels/);
      expect((error as GatewayError).details.maxDepth).toBe(64);
    }
  });
  it("given a lone surrogate in a string or a key, when parsed, then a 400 names where; whole characters, astral ones too, pass", () => {
    const inContent = refused('{"events":[{"type":"agents/context-added","payload":{"role":"user","content":"a\\ud800b"}}]}');
    expect(inContent.code).toBe("invalid_request");
    expect(inContent.message).toBe("The request body holds a string that is not well-formed Unicode (a lone surrogate such as \\ud800) at events[0].payload.content; send whole characters.");
    expect(inContent.details.issues).toEqual([{ path: "events[0].payload.content", message: "not well-formed Unicode (a lone surrogate)" }]);
    expect(refused('{"project":"\\u0000\\udc00"}').message).toContain("at project;");
    expect(refused('{"a":{"\\ud83d":1}}').message).toContain("at a.\\ud83d;");
    expect(refused('"\\udfff"').message).toContain("at The request body;");
    expect(parseJsonBounded('{"content":"\\ud83d\\ude00 ok é"}', 64, "body")).toEqual({ content: "😀 ok é" });
  });
  it("given a key twice in one object, when parsed, then a 400 names the key and where, however it is escaped; the same key in two objects passes", () => {
    const twice = refused('{"events":[{"type":"agents/context-added","payload":{"role":"user","content":"shown","content":"acted on"}}]}');
    expect(twice.code).toBe("invalid_request");
    expect(twice.message).toBe('The request body gives the key "content" twice in one object (at events[0].payload.content); send each key once.');
    expect(twice.details.issues).toEqual([{ path: "events[0].payload.content", message: "a key given twice in one object" }]);
    expect(refused('{"type":"a","\u0074ype":"b"}').message).toContain('the key "type" twice');
    expect(refused('[1,{"x":"{\\"x\\":1}","y":[{"k":1,"k":2}]}]').message).toContain("(at [1].y[0].k)");
    expect(parseJsonBounded('{"a":{"k":1},"b":{"k":2},"k":[{"k":3},{"k":4}]}', 64, "body")).toEqual({ a: { k: 1 }, b: { k: 2 }, k: [{ k: 3 }, { k: 4 }] });
  });
  it("parses JSON within the limit and names malformed JSON", () => {
    expect(parseJsonBounded('{"a":[1,{"b":2}]}', 64, "body")).toEqual({ a: [1, { b: 2 }] });
    expect(() => parseJsonBounded("{", 64, "body")).toThrow(/not valid JSON/);
  });
});

describe("sanitizeUrl", () => {
  it("replaces the query key in any case and any key-shaped token", () => {
    const out = sanitizeUrl("/v1/streams/x/subscribe?apiKey=agrt_abc_SECRET&fromOffset=1&APIKEY=other&api_key=x");
    expect(out).not.toMatch(/SECRET|other|=x\b/);
    expect(out).toContain("fromOffset=1");
    expect(sanitizeUrl("/agrt_abc123_SECRETPART/x")).toBe("/agrt_abc123_[REDACTED]/x");
  });
});

describe("LiveSubscriptionLimiter", () => {
  it("given a cap of 2, the third slot is 429 until one is released (twice releasing frees one)", () => {
    const limiter = new LiveSubscriptionLimiter(2);
    const a = limiter.acquire("key:k1");
    limiter.acquire("key:k1");
    expect(codeOf(() => limiter.acquire("key:k1"))).toBe("rate_limited");
    limiter.acquire("key:k2");
    a();
    a();
    expect(limiter.heldBy("key:k1")).toBe(1);
    limiter.acquire("key:k1");
    expect(codeOf(() => limiter.acquire("key:k1"))).toBe("rate_limited");
  });
  it("counts dev mode per client address and keys per key id", () => {
    expect(LiveSubscriptionLimiter.holderOf(DEV_PRINCIPAL, "127.0.0.2")).toBe("address:127.0.0.2");
    expect(LiveSubscriptionLimiter.holderOf({ keyId: "abc", scopes: [] }, "127.0.0.2")).toBe("key:abc");
  });
});

describe("asciiJson (gRPC error metadata)", () => {
  it("given an error quoting control and non-ASCII bytes, the metadata value is printable ASCII and the same JSON", () => {
    const body = { error: { message: 'text outside a block: "\u0001x\u0012\u00e9\ud800😀"' } };
    const text = asciiJson(body);
    expect(text).toMatch(/^[\x20-\x7e]*$/);
    expect(JSON.parse(text)).toEqual(body);
  });
});

describe("a body's bytes", () => {
  it("given bytes that are not UTF-8, then the first offending byte is found where a decoder would put U+FFFD; UTF-8 of every length passes", () => {
    const at = (hex: string) => firstNonUtf8Byte(Buffer.from(hex, "hex"));
    expect(at(Buffer.from('{"a":"é 😀 ✓"}').toString("hex"))).toBe(Buffer.byteLength('{"a":"é 😀 ✓"}'));
    expect(at("7b22ff227d")).toBe(2); // a byte no character begins with
    expect(at("4142c0af")).toBe(2); // an overlong "/"
    expect(at("41eda080")).toBe(1); // a surrogate, U+D800
    expect(at("41f4908080")).toBe(1); // past U+10FFFF
    expect(at("4141e282")).toBe(2); // cut off
    expect(at("80")).toBe(0); // a continuation byte alone
  });
  it("agrees with node's isUtf8 on random bytes: the whole is UTF-8 exactly when nothing is found, and what comes before the offset is", () => {
    let seed = 7;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) >>> 8;
    for (let round = 0; round < 3_000; round++) {
      // Mostly high bytes, so lead and continuation bytes meet often
      const bytes = Buffer.from(Array.from({ length: 1 + (next() % 12) }, () => (next() % 4 === 0 ? next() % 0x80 : 0x80 + (next() % 0x80))));
      const offset = firstNonUtf8Byte(bytes);
      expect(offset === bytes.length, bytes.toString("hex")).toBe(isUtf8(bytes));
      expect(isUtf8(bytes.subarray(0, offset)), bytes.toString("hex")).toBe(true);
    }
  });
});
