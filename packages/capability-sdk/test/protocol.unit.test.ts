// Given a provider's registration or a call on the wire, when it is parsed, then bad input is
// refused with a message naming the field and the rule.

import { describe, expect, it } from "vitest";
import { aliveSubject, callAcceptedSchema, callSubject, parseJson, registerRequestSchema, callReplySchema } from "../src/index.ts";

const valid = { namespace: "repo", instanceId: "repo-1", methods: ["listPulls"], declarations: "interface Itx { repo: {} }", ttlMs: 15_000 };

describe("registration", () => {
  it("accepts a well-formed registration", () => {
    expect(parseJson(registerRequestSchema, JSON.stringify(valid))).toEqual({ ok: true, value: valid });
  });

  it("refuses a built-in namespace, naming the field", () => {
    const parsed = parseJson(registerRequestSchema, JSON.stringify({ ...valid, namespace: "chat" }));
    expect(parsed).toEqual({ ok: false, error: "namespace: is a built-in itx namespace and cannot be provided" });
  });

  it("refuses a namespace that is not an identifier and a method that is not one", () => {
    const ns = parseJson(registerRequestSchema, JSON.stringify({ ...valid, namespace: "My-Repo" }));
    expect(ns.ok === false && ns.error).toMatch(/^namespace: must be an identifier/);
    const method = parseJson(registerRequestSchema, JSON.stringify({ ...valid, methods: ["list pulls"] }));
    expect(method.ok === false && method.error).toBe("methods.0: must be an identifier");
  });

  it("refuses an instance id that is not one subject token (it names the instance's liveness subject)", () => {
    for (const instanceId of ["repo.1", "repo*", "a b", "", "x".repeat(129)]) {
      const parsed = parseJson(registerRequestSchema, JSON.stringify({ ...valid, instanceId }));
      expect(parsed.ok === false && parsed.error, instanceId).toMatch(/^instanceId: must be 1-128 letters, digits, '-' or '_'/);
    }
  });

  it("refuses a lease shorter than a second and a body that is not JSON", () => {
    const ttl = parseJson(registerRequestSchema, JSON.stringify({ ...valid, ttlMs: 10 }));
    expect(ttl.ok === false && ttl.error).toMatch(/^ttlMs: /);
    expect(parseJson(registerRequestSchema, "{nope")).toEqual({ ok: false, error: "body is not JSON" });
  });
});

describe("calls", () => {
  it("routes a namespace to its own subject and parses both reply shapes", () => {
    expect(callSubject("repo")).toBe("agentrt.capabilities.call.repo");
    expect(parseJson(callReplySchema, '{"ok":true,"result":7}')).toEqual({ ok: true, value: { ok: true, result: 7 } });
    expect(parseJson(callReplySchema, '{"ok":false,"error":"boom"}')).toEqual({ ok: true, value: { ok: false, error: "boom" } });
  });

  it("tells the first answer (which instance took the call) from the result, and names the instance's liveness subject", () => {
    expect(parseJson(callAcceptedSchema, '{"accepted":"repo-41-abc"}')).toEqual({ ok: true, value: { accepted: "repo-41-abc" } });
    expect(parseJson(callAcceptedSchema, '{"ok":true,"result":7}').ok).toBe(false);
    expect(parseJson(callReplySchema, '{"accepted":"repo-41-abc"}').ok).toBe(false);
    expect(aliveSubject("repo-41-abc")).toBe("agentrt.capabilities.alive.repo-41-abc");
  });
});
