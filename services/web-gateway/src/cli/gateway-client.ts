// The CLI's HTTP client of the gateway: `AGENTRT_URL` (default http://127.0.0.1:8080) and
// `AGENTRT_API_KEY`. Errors come back as the gateway's `{error: {code, message}}`; a gateway
// that cannot be reached is reported with the URL tried and how to point the CLI elsewhere.

import { isUnavailableStatus, retryWhileOutcomeUnknown } from "@agentrt/contract";

export class GatewayCallError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`${message} (HTTP ${status} ${code})`);
    this.name = "GatewayCallError";
  }
}

/** The gateway did not answer at all (nothing listening, wrong host, DNS, TLS). */
export class GatewayUnreachableError extends Error {
  readonly code = "gateway_unreachable";
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    super(unreachableMessage(url, cause), { cause });
    this.name = "GatewayUnreachableError";
  }
}

export const DEFAULT_GATEWAY_URL = "http://127.0.0.1:8080";

/** Why the connection failed, from fetch's TypeError and its cause (ECONNREFUSED, ENOTFOUND, …). */
function reasonOf(error: unknown): string {
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (typeof cause?.code === "string") return cause.code;
  if (typeof cause?.message === "string") return cause.message;
  return error instanceof Error ? error.message : String(error);
}

export function unreachableMessage(url: string, cause: unknown): string {
  return (
    `cannot reach the agentrt gateway at ${url} (${reasonOf(cause)}). ` +
    "Is the stack running (./scripts/up.sh)? To use another gateway, set AGENTRT_URL, e.g. " +
    "AGENTRT_URL=http://127.0.0.1:PORT with the port ./scripts/up.sh printed."
  );
}

/** fetch, with a failure to connect turned into a GatewayUnreachableError naming `env.url`. */
export async function fetchGateway(env: ClientEnv, path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(`${env.url}${path}`, init);
  } catch (error) {
    // fetch rejects with a TypeError exactly when no HTTP answer came back.
    if (error instanceof TypeError) throw new GatewayUnreachableError(env.url, error);
    throw error;
  }
}

export interface ClientEnv {
  readonly url: string;
  readonly apiKey?: string;
}

export function clientEnv(env: NodeJS.ProcessEnv = process.env): ClientEnv {
  const url = (env.AGENTRT_URL ?? DEFAULT_GATEWAY_URL).replace(/\/+$/, "");
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    throw new Error(`AGENTRT_URL must be an http(s) URL such as ${DEFAULT_GATEWAY_URL}; got "${url}"`);
  }
  return env.AGENTRT_API_KEY ? { url, apiKey: env.AGENTRT_API_KEY } : { url };
}

export const encPath = (streamPath: string) => encodeURIComponent(streamPath);

export function headers(env: ClientEnv, extra: Record<string, string> = {}): Record<string, string> {
  return { ...(env.apiKey ? { authorization: `Bearer ${env.apiKey}` } : {}), ...extra };
}

/**
 * The most of one answer the CLI reads (an agent's state or a request can be megabytes, never
 * this): whatever answers at AGENTRT_URL, an endless body is an error, not the machine's memory.
 */
export const MAX_ANSWER_BYTES = 128 * 1024 * 1024;

/** A response's text, read to at most `maxBytes`. */
export async function boundedText(res: Response, maxBytes: number, env: ClientEnv): Promise<string> {
  if (res.body === null) return "";
  const decoder = new TextDecoder();
  let text = "";
  let bytes = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    if (bytes > maxBytes) {
      await res.body.cancel().catch(() => undefined);
      throw new GatewayCallError(res.status, "too_large", `the gateway at ${env.url} answered more than ${maxBytes} bytes; is AGENTRT_URL an agentrt gateway?`);
    }
    text += decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}

/**
 * Sends a keyed append again while its outcome is unknown (the contract's
 * `retryWhileOutcomeUnknown`): no answer came back, or the gateway answered 502-504.
 */
export function retryUnknownOutcome<T>(call: () => Promise<T>, onRetry: (error: Error, delayMs: number) => void = () => undefined): Promise<T> {
  return retryWhileOutcomeUnknown(
    call,
    (error) => error instanceof GatewayUnreachableError || (error instanceof GatewayCallError && isUnavailableStatus(error.status)),
    (error, delayMs) => onRetry(error as Error, delayMs),
  );
}

export async function callGateway<T>(env: ClientEnv, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetchGateway(env, path, {
    method,
    headers: headers(env, body === undefined ? {} : { "content-type": "application/json" }),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await boundedText(res, MAX_ANSWER_BYTES, env);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new GatewayCallError(res.status, "not_json", `the gateway at ${env.url} answered with non-JSON: ${text.slice(0, 120)}`);
  }
  if (!res.ok) {
    const error = (json as { error?: { code?: string; message?: string } }).error;
    throw new GatewayCallError(res.status, error?.code ?? "unknown", error?.message ?? res.statusText);
  }
  return json as T;
}

/** Parses `--name value` flags and positional args. */
/**
 * Every agent `GET /v1/agents?prefix=` lists, page after page: a page ends at its limit or its
 * fold budget and names the `next` to continue after. Reading only the first page had left a
 * prefix's later agents out of `agents audit --prefix` (reported as all audited) and `agents list`.
 */
export async function* listAllAgents<A extends { streamPath: string }>(env: ClientEnv, prefix: string | undefined): AsyncGenerator<A> {
  let after: string | undefined;
  do {
    const query = new URLSearchParams();
    if (prefix !== undefined && prefix !== "") query.set("prefix", prefix);
    if (after !== undefined) query.set("after", after);
    const page = await callGateway<{ agents: A[]; next?: string }>(env, "GET", `/v1/agents${query.size > 0 ? `?${query}` : ""}`);
    yield* page.agents;
    // The listing is in path order, so each page's cursor is past the one before: one that is not
    // would have the CLI page for ever (a server alternating two cursors).
    if (page.next !== undefined && after !== undefined && page.next <= after) {
      throw new GatewayCallError(200, "bad_cursor", `the gateway at ${env.url} answered a listing page whose next (${JSON.stringify(page.next.slice(0, 200))}) is not past the one before; is AGENTRT_URL an agentrt gateway?`);
    }
    after = page.next;
  } while (after !== undefined);
}

export function parseArgs(args: readonly string[], flags: readonly string[], booleans: readonly string[] = []): { positional: string[]; flags: Record<string, string | true> } {
  const out: Record<string, string | true> = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg.startsWith("--")) {
      const name = arg.slice(2);
      if (booleans.includes(name)) out[name] = true;
      else if (flags.includes(name)) {
        const value = args[++i];
        if (value === undefined) throw new Error(`--${name} needs a value`);
        out[name] = value;
      } else throw new Error(`unknown option ${arg}`);
    } else positional.push(arg);
  }
  return { positional, flags: out };
}
