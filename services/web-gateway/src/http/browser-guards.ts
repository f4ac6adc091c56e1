// What a web page the user merely visits must not be able to do to a gateway on their machine.
// A browser sends some requests to any address without asking the target first: a form-like POST
// (Content-Type text/plain, a form type, or none) and a WebSocket handshake. And a page whose
// name an attacker re-points at 127.0.0.1 (DNS rebinding) counts as the gateway's own origin, so
// it may read every answer.
//
// - Every request body must be declared JSON (`application/json` or `application/<x>+json`,
//   UTF-8): a browser asks the server before sending such a POST to another origin, and this
//   server never says yes (it sends no CORS headers). So a page cannot append through a
//   visitor's browser, whatever the auth mode.
// - Dev mode (`AGENTRT_DEV_MODE=1`: no keys, loopback only) also answers only requests addressed
//   to a loopback name (`Host`), and refuses any that a page of another origin than the gateway's
//   own sent (`Origin`, which browsers put on cross-origin fetches, every POST and every WebSocket
//   handshake). Another loopback port is another origin: a page another local server serves
//   (a dev server previewing someone's site, a local app) had opened a WebSocket to any stream.
//   With keys, a page holds none, and the key is what such a request lacks.
// - No answer may be framed by another page (BROWSER_HEADERS), so the UI cannot be laid under a
//   page's own buttons.

import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { isIP } from "node:net";
import { GatewayError } from "../errors.ts";

/** `localhost`, or an address literal in 127.0.0.0/8 or ::1 (bracketed or not): what may be bound in dev mode. */
export function isLoopbackAddress(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, "");
  if (name === "localhost") return true;
  const bare = name.startsWith("[") && name.endsWith("]") ? name.slice(1, -1) : name;
  if (isIP(bare) === 4) return bare.startsWith("127.");
  if (isIP(bare) === 6) return bare === "::1" || bare === "0:0:0:0:0:0:0:1";
  return false;
}

/** A loopback address, or a name under `.localhost` (browsers resolve those to loopback themselves): what a request may be addressed to. */
export function isLoopbackHostname(hostname: string): boolean {
  return isLoopbackAddress(hostname) || hostname.toLowerCase().replace(/\.$/, "").endsWith(".localhost");
}

/** The host name of a `Host` header value (`name`, `name:port`, `[v6]`, `[v6]:port`), or undefined when malformed. */
export function hostnameOfHostHeader(value: string): string | undefined {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]\s]+)(?::\d{1,5})?$/.exec(value.trim());
  return match?.[1];
}

function forbidden(path: string, message: string, rule: string): GatewayError {
  return new GatewayError("forbidden", message, { issues: [{ path, message: rule }] });
}

/**
 * Dev mode's addressing rule: `Host` names a loopback host, and `Origin`, when a browser sent
 * one, is this gateway's own: http(s) with the very host and port the request is addressed to
 * (the UI it serves). 403 naming the header otherwise.
 */
export function assertDevModeAddressing(headers: IncomingHttpHeaders): void {
  const host = headers.host;
  const hostname = host === undefined ? undefined : hostnameOfHostHeader(host);
  if (hostname === undefined || !isLoopbackHostname(hostname)) {
    throw forbidden(
      "headers.host",
      `This gateway runs without authentication (AGENTRT_DEV_MODE=1) and answers only requests addressed to a loopback name ` +
        `(localhost, 127.0.0.1, [::1]); this one was addressed to ${JSON.stringify(host ?? "")}. ` +
        "Open it as http://127.0.0.1:<port>/, or run the gateway with API keys.",
      "must name a loopback host in dev mode",
    );
  }
  const origin = headers.origin;
  if (origin === undefined) return;
  if (!isOwnOrigin(origin, host as string)) {
    throw forbidden(
      "headers.origin",
      `This gateway runs without authentication (AGENTRT_DEV_MODE=1) and refuses requests from web pages of other origins than its own ` +
        `(${JSON.stringify(host)}); this one came from ${JSON.stringify(origin)}. Use the UI it serves, or run the gateway with API keys.`,
      "must be the gateway's own origin in dev mode",
    );
  }
}

/** Whether `origin` is an http(s) origin whose host and port are the `Host` the request names. */
function isOwnOrigin(origin: string, host: string): boolean {
  // An http(s) origin is a scheme and what a Host header holds; "null" (a sandboxed frame, a
  // file:// page) is no origin anyone can vouch for.
  const match = /^(https?):\/\/([^/]*)$/i.exec(origin.trim());
  if (match === null) return false;
  const scheme = (match[1] as string).toLowerCase();
  const own = authorityWithPort(host, scheme);
  return own !== undefined && authorityWithPort(match[2] as string, scheme) === own;
}

/** `name:port` of a Host header or origin authority, lower-cased, with the scheme's default port filled in. */
function authorityWithPort(authority: string, scheme: string): string | undefined {
  const trimmed = authority.trim().toLowerCase();
  const hostname = hostnameOfHostHeader(trimmed);
  if (hostname === undefined) return undefined;
  const port = trimmed.slice(hostname.length).replace(/^:/, "") || (scheme === "https" ? "443" : "80");
  return `${hostname.replace(/\.$/, "")}:${Number(port)}`;
}

/**
 * A request body must be declared JSON in UTF-8 (415 naming the header otherwise): the one
 * media type the API reads, and one a browser will not send to another origin unasked.
 */
export function assertJsonBody(headers: IncomingHttpHeaders): void {
  const declared = headers["content-type"];
  const [type = "", ...params] = (declared ?? "").split(";").map((part) => part.trim().toLowerCase());
  const json = type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(type);
  // Each parameter `name=value` (RFC 9110), the charset at most once: `charset=utf-8;
  // charset=latin1`, or a bare `charset`, read as UTF-8 here and as something else elsewhere.
  const wellFormed = params.every((p) => /^[a-z0-9!#$%&'*+.^_`|~-]+=(?:[a-z0-9!#$%&'*+.^_`|~-]+|"[^"\\]*")$/.test(p));
  const charsets = params.filter((p) => p.startsWith("charset="));
  const charset = charsets[0]?.slice("charset=".length).replace(/^"|"$/g, "");
  if (json && wellFormed && charsets.length <= 1 && (charset === undefined || charset === "utf-8" || charset === "utf8")) {
    // A compressed body is not inflated: read as JSON it was taken as plain text (red-team).
    const encoding = headers["content-encoding"]?.trim().toLowerCase();
    if (encoding === undefined || encoding === "" || encoding === "identity") return;
    const shown = JSON.stringify(headers["content-encoding"]!.slice(0, 80));
    throw new GatewayError("unsupported_media_type", `The request body must be sent uncompressed; this request has Content-Encoding ${shown}.`, {
      issues: [{ path: "headers.content-encoding", message: "must be identity (or absent)" }],
    });
  }
  const got = declared === undefined ? "no Content-Type" : `Content-Type ${JSON.stringify(declared)}`;
  const rule = !json ? "must be application/json" : !wellFormed || charsets.length > 1 ? "parameters are name=value, the charset once" : "JSON bodies are UTF-8";
  throw new GatewayError("unsupported_media_type", `The request body must be sent as Content-Type: application/json (UTF-8); this request has ${got}.`, {
    issues: [{ path: "headers.content-type", message: rule }],
  });
}

/**
 * Headers on every HTTP answer: no page may frame the UI (a visited page could otherwise lay it
 * under its own and have the user click Send or Pause for it: clickjacking), no answer is
 * sniffed as another type than it says, and no address leaks in a Referer.
 */
/**
 * Scripts only from the gateway's own files, never inline: the UI holds the API key in
 * localStorage, so a script injected into it one day (an escaping mistake) must not run.
 * Styles may be inline (the UI sets element styles); connections only to this origin.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export const BROWSER_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

export function setBrowserHeaders(res: ServerResponse): void {
  for (const [name, value] of Object.entries(BROWSER_HEADERS)) res.setHeader(name, value);
}
