// The model calls' HTTP: a keep-alive `node:http`/`node:https` request behind the `fetch`
// signature the `openai` client takes (its `fetch` option). Node's global fetch (undici's WHATWG
// layer) took nearly twice as long to put a chat request on the wire: 0.55 ms against 0.31 ms at
// p50 in an idle process (`pnpm bench driver/model-call`), and 2.45 ms from `create()` to the model
// having the body inside a busy driver (BENCHMARKS.md, "Where a sequential turn's 5 ms go").
// The model call is on every turn's path.
//
// Only what a model call uses goes this way: an http(s) URL and a string or byte body. Anything
// else (a streamed upload) is handed to the global fetch unchanged. A redirect is refused, not
// followed: it would send the conversation again, to wherever it points. The
// response is a standard `Response` whose body streams as the socket delivers, so the client's
// SSE parsing, its error mapping and the caller's abort work as they do on the global fetch.

import { Agent as HttpAgent, type IncomingMessage, type ClientRequest, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { SseFramer, SseFramingError } from "./sse-framing.ts";

type Fetch = typeof globalThis.fetch;

/** A request that failed on a kept-alive socket the server had closed meanwhile is sent again, once. */
const STALE_SOCKET_CODES = new Set(["ECONNRESET", "EPIPE"]);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

export interface HttpFetchOptions {
  /** What is not a plain http(s) call goes here (default: the global fetch). */
  readonly fallback?: Fetch;
  /** Certificate authorities https trusts instead of Node's defaults (which NODE_EXTRA_CA_CERTS extends). */
  readonly ca?: string | Buffer;
}

export interface HttpFetch {
  readonly fetch: Fetch;
  /** Closes the kept-alive sockets (shutdown, tests). */
  close(): void;
}

export function createHttpFetch(options: HttpFetchOptions = {}): HttpFetch {
  const fallback = options.fallback ?? globalThis.fetch;
  const http = new HttpAgent({ keepAlive: true, scheduling: "lifo" });
  const https = new HttpsAgent({ keepAlive: true, scheduling: "lifo", ...(options.ca === undefined ? {} : { ca: options.ca }) });

  const send = (url: URL, init: RequestInit | undefined, body: string | Uint8Array | undefined, retried: boolean): Promise<Response> =>
    new Promise<Response>((resolve, reject) => {
      const secure = url.protocol === "https:";
      let settled = false;
      const req: ClientRequest = (secure ? httpsRequest : httpRequest)(
        {
          agent: secure ? https : http,
          method: init?.method ?? "GET",
          protocol: url.protocol,
          hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
          port: url.port === "" ? undefined : url.port,
          path: `${url.pathname}${url.search}`,
          headers: plainHeaders(init?.headers, body),
          ...(init?.signal ? { signal: init.signal } : {}),
        },
        (res) => {
          settled = true;
          const status = res.statusCode ?? 0;
          if (REDIRECT_STATUSES.has(status)) {
            // Not followed: a redirect would send the whole conversation again, to wherever it
            // points (another origin too). The endpoint's URL is configuration; say which to set.
            res.resume();
            reject(new Error(`the model endpoint answered HTTP ${status}, a redirect to ${JSON.stringify(res.headers.location ?? "(no location)")}; redirects are not followed: configure the endpoint's own URL`));
            return;
          }
          // What the endpoint sent must not throw out of this callback (that would end the
          // process): a status or a header a `Response` cannot hold fails this call instead.
          try {
            if (status < 200 || status > 599) throw new TypeError(`the model endpoint answered with HTTP status ${status}, which fetch cannot represent`);
            const nullBody = NULL_BODY_STATUSES.has(status) || init?.method === "HEAD";
            const headers = headersOf(res);
            // An answer that streams events is re-framed an event at a time (sse-framing.ts).
            const framer = status >= 200 && status < 300 && isEventStream(headers) ? new SseFramer() : undefined;
            const response = new Response(nullBody ? null : bodyOf(res, framer), { status, statusText: res.statusMessage ?? "", headers });
            if (nullBody) res.resume();
            resolve(response);
          } catch (error) {
            res.destroy();
            reject(error instanceof Error ? error : new TypeError(String(error)));
          }
        },
      );
      req.on("error", (error: NodeJS.ErrnoException) => {
        if (settled) return;
        settled = true;
        // The server closed an idle kept-alive socket as we reused it: nothing of the request
        // was answered, so it goes once more on a fresh socket.
        if (!retried && req.reusedSocket && error.code !== undefined && STALE_SOCKET_CODES.has(error.code) && init?.signal?.aborted !== true) {
          resolve(send(url, init, body, true));
          return;
        }
        reject(error);
      });
      req.end(body);
    });

  const fetch = (async (input: Parameters<Fetch>[0], init?: RequestInit): Promise<Response> => {
    const url = typeof input === "string" ? new URL(input) : input instanceof URL ? input : undefined;
    const body = init?.body;
    const plain = body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array;
    if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:") || !plain || init?.redirect === "manual" || init?.redirect === "error") {
      return fallback(input, init);
    }
    init?.signal?.throwIfAborted();
    return send(url, init, body ?? undefined, false);
  }) as Fetch;

  return {
    fetch,
    close() {
      http.destroy();
      https.destroy();
    },
  };
}

function plainHeaders(headers: RequestInit["headers"], body: string | Uint8Array | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(headers).forEach((value, name) => {
    out[name] = value;
  });
  if (body !== undefined && out["content-length"] === undefined) out["content-length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength);
  return out;
}

function headersOf(res: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i] as string, raw[i + 1] as string);
  return headers;
}

/**
 * Bytes of one model response taken at most: a reply a settlement can store (MAX_REPLY_BYTES,
 * 400 KB) streamed a token a chunk is tens of MB of SSE, far below this.
 */
export const MAX_MODEL_RESPONSE_BYTES = 64 * 1024 * 1024;
/**
 * Bytes of one line of the response taken at most (a whole 400 KB reply in one chunk, escaped,
 * is under 2.4 MB). The client's SSE decoder copies a line's whole buffer again for every
 * network chunk, so one line of 50 MB burned the driver's CPU until the idle watchdog fired,
 * which then blamed a model that was sending all along.
 */
export const MAX_MODEL_LINE_BYTES = 4 * 1024 * 1024;

/** A response cut off at one of its bounds, saying which. */
const overBound = (why: string): Error => Object.assign(new Error(`${why}; the call was cut off`), { code: "ERR_MODEL_RESPONSE_TOO_LARGE" });

const cutOff = (): Error => Object.assign(new Error("the model endpoint closed the connection before the response ended"), { code: "ECONNRESET" });

const isEventStream = (headers: Headers): boolean => /^\s*text\/event-stream\s*(;|$)/i.test(headers.get("content-type") ?? "");

/**
 * The response body as a web stream, paused while its reader is behind; a cut connection is an
 * error, not an end. With a framer, what is enqueued is the events it completes, one a chunk.
 */
function bodyOf(res: IncomingMessage, framer?: SseFramer): ReadableStream<Uint8Array> {
  let ended = false;
  let total = 0;
  let lineBytes = 0;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      res.on("data", (chunk: Buffer) => {
        if (ended) return;
        total += chunk.byteLength;
        // SSE ends a line with LF, CR or CRLF: a stream of CR-only lines is lines too.
        const newline = Math.max(chunk.lastIndexOf(10), chunk.lastIndexOf(13));
        lineBytes = newline === -1 ? lineBytes + chunk.byteLength : chunk.byteLength - newline - 1;
        const over =
          total > MAX_MODEL_RESPONSE_BYTES
            ? `the model endpoint's response passed ${MAX_MODEL_RESPONSE_BYTES} bytes`
            : lineBytes > MAX_MODEL_LINE_BYTES
              ? `the model endpoint sent a line of more than ${MAX_MODEL_LINE_BYTES} bytes`
              : undefined;
        const fail = (why: string): void => {
          ended = true;
          controller.error(overBound(why));
          res.destroy();
        };
        if (over !== undefined) return fail(over);
        const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        if (framer === undefined) controller.enqueue(bytes);
        else {
          try {
            for (const event of framer.push(bytes)) controller.enqueue(event);
          } catch (error) {
            if (!(error instanceof SseFramingError)) throw error;
            return fail(error.message);
          }
        }
        if ((controller.desiredSize ?? 1) <= 0) res.pause();
      });
      res.on("end", () => {
        if (ended) return;
        ended = true;
        try {
          for (const event of framer?.end() ?? []) controller.enqueue(event);
        } catch (error) {
          if (!(error instanceof SseFramingError)) throw error;
          controller.error(overBound(error.message));
          return;
        }
        controller.close();
      });
      res.on("error", (error: NodeJS.ErrnoException) => {
        if (ended) return;
        ended = true;
        // Node reports a connection reset mid-response as a bare "aborted".
        controller.error(error.message === "aborted" ? cutOff() : error);
      });
      res.on("close", () => {
        if (ended) return;
        ended = true;
        controller.error(cutOff());
      });
    },
    pull() {
      res.resume();
    },
    cancel() {
      ended = true;
      res.destroy();
    },
  });
}
