// The pure parts of auth: key hashing and verification, scope matching, token buckets, and
// the dev-mode loopback rule.
import { describe, expect, it } from "vitest";
import { assertDevModeBindable } from "../src/auth/authenticator.ts";
import { keysFileSchema, mintApiKey, pathUnder, scopeAllows, verifyApiKey } from "../src/auth/keys.ts";
import { RateLimiter } from "../src/auth/rate-limit.ts";

describe("API keys", () => {
  it("stores only a salted hash and verifies the presented key", () => {
    const { apiKey, stored } = mintApiKey([{ prefix: "/agents", verbs: ["read"] }], "ci");
    expect(JSON.stringify(stored)).not.toContain(apiKey.slice(`agrt_${stored.id}_`.length));
    expect(keysFileSchema.parse({ keys: [stored] }).keys[0]!.id).toBe(stored.id);
    const keys = new Map([[stored.id, stored]]);
    expect(verifyApiKey(keys, apiKey)?.id).toBe(stored.id);
    expect(verifyApiKey(keys, apiKey.slice(0, -1) + (apiKey.endsWith("A") ? "B" : "A"))).toBeNull();
    expect(verifyApiKey(keys, "agrt_unknown_secret")).toBeNull();
    expect(verifyApiKey(keys, "not-a-key")).toBeNull();
  });

  it("matches prefixes at segment boundaries and lets admin imply every verb", () => {
    expect(pathUnder("/agents/a/b", "/agents/a")).toBe(true);
    expect(pathUnder("/agents/a/b", "/agents/a/")).toBe(true);
    expect(pathUnder("/agents/ab", "/agents/a")).toBe(false);
    expect(pathUnder("/anything", "/")).toBe(true);
    expect(scopeAllows([{ prefix: "/a", verbs: ["read"] }], "append", "/a/x")).toBe(false);
    expect(scopeAllows([{ prefix: "/a", verbs: ["admin"] }], "append", "/a/x")).toBe(true);
  });
});

describe("token buckets", () => {
  it("allows the burst, then refills at the configured rate", () => {
    let now = 0;
    const limiter = new RateLimiter({ perSecond: 2, burst: 3 }, () => now);
    expect([limiter.take("k"), limiter.take("k"), limiter.take("k")]).toEqual([0, 0, 0]);
    expect(limiter.take("k")).toBe(500);
    now = 500;
    expect(limiter.take("k")).toBe(0);
    expect(limiter.take("other")).toBe(0);
  });
});

describe("dev mode", () => {
  it("is allowed on loopback only", () => {
    expect(() => assertDevModeBindable("127.0.0.1")).not.toThrow();
    expect(() => assertDevModeBindable("::1")).not.toThrow();
    expect(() => assertDevModeBindable("0.0.0.0")).toThrow(/only allowed on loopback/);
    expect(() => assertDevModeBindable("10.1.2.3")).toThrow(/only allowed on loopback/);
    // A DNS name that merely starts like a loopback address may resolve anywhere.
    expect(() => assertDevModeBindable("127.0.0.1.evil.example")).toThrow(/only allowed on loopback/);
    expect(() => assertDevModeBindable("app.localhost")).toThrow(/only allowed on loopback/);
    expect(() => assertDevModeBindable("localhost")).not.toThrow();
  });
});
