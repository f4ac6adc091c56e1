// Parses an HTTP request target (`req.url`) without trusting it. The WHATWG URL parser resolves
// `//host/x` and `/\host` as another origin and throws on `//`, so the target is split by hand:
// origin-form only, a bounded length, no control characters, and percent-encodings that
// decode. Every failure is a 400 that names the rule; nothing here can throw anything else.

import { GatewayError } from "../errors.ts";

/** Longer targets are refused (Node's own header limit is 16 KiB, far above any real route). */
export const MAX_REQUEST_TARGET_CHARS = 8192;

export interface RequestTarget {
  /** The raw, still percent-encoded path (route params are decoded per segment). */
  readonly pathname: string;
  readonly query: URLSearchParams;
}

function badTarget(message: string): GatewayError {
  return new GatewayError("invalid_request", `Invalid request target: ${message}.`, { issues: [{ path: "url", message }] });
}

// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
export const CONTROL = /[\u0000-\u001f\u007f]/;

export function parseRequestTarget(rawUrl: string | undefined): RequestTarget {
  const url = rawUrl ?? "/";
  if (url.length > MAX_REQUEST_TARGET_CHARS) throw badTarget(`longer than ${MAX_REQUEST_TARGET_CHARS} characters`);
  if (!url.startsWith("/")) throw badTarget("must be a path starting with /");
  const hash = url.indexOf("#");
  const withoutFragment = hash === -1 ? url : url.slice(0, hash);
  const question = withoutFragment.indexOf("?");
  const pathname = question === -1 ? withoutFragment : withoutFragment.slice(0, question);
  const search = question === -1 ? "" : withoutFragment.slice(question + 1);
  if (CONTROL.test(pathname)) throw badTarget("control characters are not allowed in the path");
  if (pathname.includes("\\")) throw badTarget("backslashes are not allowed in the path");
  const decoded = decodePath(pathname);
  if (CONTROL.test(decoded)) throw badTarget("encoded control characters (such as %00) are not allowed in the path");
  return { pathname, query: new URLSearchParams(search) };
}

/** The decoded path, or a 400 when a percent-encoding is malformed (`%`, `%E0%A4%A`). */
export function decodePath(pathname: string): string {
  try {
    return decodeURIComponent(pathname);
  } catch {
    throw badTarget("malformed percent-encoding in the path");
  }
}
