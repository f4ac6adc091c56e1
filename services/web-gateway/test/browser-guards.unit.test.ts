// The rules that keep a visited web page from using the gateway through the visitor's browser
// (src/http/browser-guards.ts): request bodies declared JSON, and dev mode's loopback addressing.
import { describe, expect, it } from "vitest";
import { GatewayError } from "../src/errors.ts";
import { assertDevModeAddressing, assertJsonBody, hostnameOfHostHeader, isLoopbackHostname } from "../src/http/browser-guards.ts";

function refusal(fn: () => void): { code: string; path: string; rule: string; message: string } | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    const issues = error.details.issues as Array<{ path: string; message: string }>;
    return { code: error.code, path: issues[0]!.path, rule: issues[0]!.message, message: error.message };
  }
}

describe("loopback host names", () => {
  it("given loopback names and addresses, when checked, then each is loopback", () => {
    for (const name of ["localhost", "LOCALHOST", "localhost.", "app.localhost", "127.0.0.1", "127.1.2.3", "[::1]", "::1", "[0:0:0:0:0:0:0:1]"]) {
      expect(isLoopbackHostname(name), name).toBe(true);
    }
  });
  it("given other names and addresses, when checked, then none is loopback", () => {
    for (const name of ["evil.example", "localhost.evil.example", "127.0.0.1.evil.example", "0.0.0.0", "10.0.0.1", "[::]", "[::ffff:127.0.0.1]", "128.0.0.1", ""]) {
      expect(isLoopbackHostname(name), name).toBe(false);
    }
  });
  it("given Host header values, when split, then the host name comes without the port, and malformed ones give nothing", () => {
    expect(hostnameOfHostHeader("127.0.0.1:8080")).toBe("127.0.0.1");
    expect(hostnameOfHostHeader("localhost")).toBe("localhost");
    expect(hostnameOfHostHeader("[::1]:8080")).toBe("[::1]");
    for (const bad of ["", "a b", "127.0.0.1:80:80", "[::1", "host:port", "::1"]) expect(hostnameOfHostHeader(bad), bad).toBeUndefined();
  });
});

describe("dev mode's addressing rule", () => {
  it("given a request to a loopback name with no Origin or the gateway's own, when checked, then it passes", () => {
    expect(refusal(() => assertDevModeAddressing({ host: "127.0.0.1:8080" }))).toBeUndefined();
    expect(refusal(() => assertDevModeAddressing({ host: "localhost:8080", origin: "http://localhost:8080" }))).toBeUndefined();
    expect(refusal(() => assertDevModeAddressing({ host: "LocalHost:8080", origin: "http://localhost:8080" }))).toBeUndefined();
    expect(refusal(() => assertDevModeAddressing({ host: "[::1]:8080", origin: "http://[::1]:8080" }))).toBeUndefined();
    expect(refusal(() => assertDevModeAddressing({ host: "localhost", origin: "http://localhost:80" }))).toBeUndefined();
    expect(refusal(() => assertDevModeAddressing({ host: "127.0.0.1:443", origin: "https://127.0.0.1" }))).toBeUndefined();
  });
  it("given a page another local server serves (another port, another loopback name), when checked, then 403 naming the Origin header", () => {
    // Red-team: a page on another loopback port opened a WebSocket to any stream of the key-less gateway.
    for (const [host, origin] of [
      ["127.0.0.1:8080", "http://localhost:1"],
      ["127.0.0.1:8080", "http://a.localhost:8080"],
      ["[::1]:8080", "http://127.0.0.1:5173"],
      ["localhost:8080", "http://127.0.0.1:8080"],
    ] as const) {
      expect(refusal(() => assertDevModeAddressing({ host, origin })), origin).toMatchObject({ code: "forbidden", path: "headers.origin" });
    }
  });
  it("given a Host that is not a loopback name (a rebound DNS name), when checked, then 403 naming the Host header", () => {
    for (const host of ["evil.example:8080", "evil.example", "10.0.0.5:8080", "a b", undefined]) {
      const refused = refusal(() => assertDevModeAddressing(host === undefined ? {} : { host }));
      expect(refused, String(host)).toMatchObject({ code: "forbidden", path: "headers.host" });
      expect(refused?.message).toContain("AGENTRT_DEV_MODE=1");
    }
  });
  it("given a page of another origin (or an opaque one), when checked, then 403 naming the Origin header", () => {
    for (const origin of ["http://evil.example", "https://evil.example:8443", "null", "http://127.0.0.1.evil.example", "file://", "ws://127.0.0.1:8080"]) {
      expect(refusal(() => assertDevModeAddressing({ host: "127.0.0.1:8080", origin })), origin).toMatchObject({ code: "forbidden", path: "headers.origin" });
    }
  });
});

describe("request bodies declared JSON", () => {
  it("given application/json, a +json type or a UTF-8 charset, when checked, then it passes", () => {
    for (const type of ["application/json", "Application/JSON; charset=UTF-8", "application/json;charset=\"utf-8\"", "application/merge-patch+json"]) {
      expect(refusal(() => assertJsonBody({ "content-type": type })), type).toBeUndefined();
    }
  });
  it("given what a browser may send to another origin unasked, or no type, when checked, then 415 naming the header", () => {
    for (const type of ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonp", "", undefined]) {
      const refused = refusal(() => assertJsonBody(type === undefined ? {} : { "content-type": type }));
      expect(refused, String(type)).toMatchObject({ code: "unsupported_media_type", path: "headers.content-type" });
      expect(refused?.message).toContain("Content-Type: application/json");
    }
  });
  it("given a compressed JSON body, when checked, then 415 naming Content-Encoding (it is not inflated); identity passes", () => {
    for (const encoding of ["gzip", "deflate, gzip", "br"]) {
      const refused = refusal(() => assertJsonBody({ "content-type": "application/json", "content-encoding": encoding }));
      expect(refused, encoding).toMatchObject({ code: "unsupported_media_type", path: "headers.content-encoding" });
      expect(refused?.message).toBe(`The request body must be sent uncompressed; this request has Content-Encoding ${JSON.stringify(encoding)}.`);
    }
    expect(refusal(() => assertJsonBody({ "content-type": "application/json", "content-encoding": "identity" }))).toBeUndefined();
  });
  it("given JSON in another charset, when checked, then 415 saying JSON bodies are UTF-8", () => {
    expect(refusal(() => assertJsonBody({ "content-type": "application/json; charset=iso-8859-1" }))).toMatchObject({ code: "unsupported_media_type" });
  });
  it("given parameters another reader could take otherwise (two charsets, a bare name, an open quote), when checked, then 415 naming the rule", () => {
    for (const type of ["application/json; charset=utf-8; charset=latin1", "application/json; charset", "application/json; charset=\"utf-8", "application/json; charset = utf-8", "application/json;;"]) {
      const refused = refusal(() => assertJsonBody({ "content-type": type }));
      expect(refused, type).toMatchObject({ code: "unsupported_media_type", path: "headers.content-type", rule: "parameters are name=value, the charset once" });
    }
    expect(refusal(() => assertJsonBody({ "content-type": "application/json; charset=utf-8; profile=\"x y\"" }))).toBeUndefined();
  });
});
