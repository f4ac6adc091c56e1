// A live subscriber of the gateway as a user's code writes one, over SSE or WebSocket: it
// records every message with its arrival time and durable offset, can resume after a drop the
// way the contract says (SSE: Last-Event-ID; WebSocket: fromOffset = last + 1), and lets a test
// wait for what it expects with a deadline. The one implementation behind the gateway's API
// tests, the security tests, the chaos and soak followers and the fan-out bench.

import WebSocket from "ws";
import { readSseFrames } from "./sse.ts";

export type LiveTransport = "sse" | "ws";

export interface LiveMessage {
  /** The SSE frame's id as sent (durable events only); absent on WebSocket messages. */
  readonly id?: string;
  /** The durable offset, when the message is a durable event (not the ephemeral live lane). */
  readonly offset?: number;
  /** The message parsed as JSON (the raw text when it is not JSON). */
  readonly data: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- events asserted in tests
  readonly raw: string;
  /** performance.now() at arrival. */
  readonly at: number;
}

export interface FollowLiveOptions {
  /** Request headers (e.g. authorization); WebSocket upgrade headers too. */
  readonly headers?: Record<string, string>;
  /**
   * Reconnect after a drop, this long later, resuming after the last durable offset held; the
   * wait doubles (up to `maxReconnectAfterMs`) while attempts keep failing, and starts over
   * once a connection opens, as a well-behaved client's would.
   */
  readonly reconnectAfterMs?: number;
  /** The longest wait between two failed attempts (default 2 s). */
  readonly maxReconnectAfterMs?: number;
  /** Called on every message as it arrives (before waiters are checked). */
  readonly onMessage?: (message: LiveMessage, messages: readonly LiveMessage[]) => void;
}

export interface LiveFollower {
  /** The first connection's answer: 200 (SSE) or 101 (WebSocket), the refusal's status, or 0 when the connection failed. */
  readonly opened: Promise<number>;
  readonly messages: readonly LiveMessage[];
  /** Durable offsets in arrival order, across reconnections. */
  readonly received: readonly number[];
  /** The last offset held at each successful (re)connection. */
  readonly resumes: readonly number[];
  readonly reconnects: number;
  /** Every message's raw text, one a line. */
  text(): string;
  /** Resolves when `done` holds for the messages so far; fails at the deadline saying how far it got. */
  until(done: (messages: readonly LiveMessage[]) => boolean, options?: { timeoutMs?: number; what?: string }): Promise<readonly LiveMessage[]>;
  close(): void;
}

function parseData(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export function followLive(transport: LiveTransport, url: string, options: FollowLiveOptions = {}): LiveFollower {
  const messages: LiveMessage[] = [];
  const received: number[] = [];
  const resumes: number[] = [];
  const waiters = new Set<() => void>();
  let reconnects = 0;
  // Attempts since a connection last opened: the reconnect wait doubles with each.
  let failures = 0;
  let closed = false;
  let settleOpened: (status: number) => void = () => {};
  const opened = new Promise<number>((resolve) => (settleOpened = resolve));
  let stopCurrent: () => void = () => {};

  const take = (message: LiveMessage) => {
    messages.push(message);
    if (message.offset !== undefined) received.push(message.offset);
    options.onMessage?.(message, messages);
    for (const waiter of [...waiters]) waiter();
  };
  const dropped = () => {
    if (closed || options.reconnectAfterMs === undefined) return;
    reconnects += 1;
    const wait = Math.min(options.maxReconnectAfterMs ?? 2_000, options.reconnectAfterMs * 2 ** Math.min(failures, 10));
    failures += 1;
    setTimeout(connect, wait);
  };

  const connectSse = async () => {
    const controller = new AbortController();
    stopCurrent = () => controller.abort();
    const last = received.at(-1);
    try {
      const headers = { ...options.headers, ...(last === undefined ? {} : { "last-event-id": String(last) }) };
      const response = await fetch(url, { headers, signal: controller.signal });
      settleOpened(response.status);
      if (response.status !== 200 || response.body === null) throw new Error(`subscribe answered ${response.status}`);
      failures = 0;
      resumes.push(last ?? 0);
      for await (const frame of readSseFrames(response.body as AsyncIterable<Uint8Array>)) {
        if (frame.data === "") continue;
        const id = frame.id === undefined ? {} : { id: frame.id, offset: Number(frame.id) };
        take({ ...id, data: parseData(frame.data), raw: frame.data, at: performance.now() });
      }
    } catch {
      settleOpened(0);
    }
    dropped();
  };

  const connectWs = () => {
    const last = received.at(-1);
    const target = new URL(url);
    if (last !== undefined) target.searchParams.set("fromOffset", String(last + 1));
    const socket = new WebSocket(target, { headers: options.headers ?? {} });
    stopCurrent = () => socket.terminate();
    socket.once("open", () => {
      settleOpened(101);
      failures = 0;
      resumes.push(last ?? 0);
    });
    socket.once("unexpected-response", (_request, response) => {
      settleOpened(response.statusCode ?? 0);
      socket.terminate();
    });
    socket.on("message", (bytes) => {
      const raw = String(bytes);
      const data = parseData(raw) as { offset?: unknown; ephemeral?: unknown } | null;
      const durable = typeof data === "object" && data !== null && data.ephemeral !== true && typeof data.offset === "number";
      take({ ...(durable ? { offset: data.offset as number } : {}), data, raw, at: performance.now() });
    });
    socket.on("error", () => {
      settleOpened(0);
      socket.terminate();
    });
    socket.once("close", dropped);
  };

  const connect = () => {
    if (closed) return;
    if (transport === "sse") void connectSse();
    else connectWs();
  };
  connect();

  return {
    opened,
    messages,
    received,
    resumes,
    get reconnects() {
      return reconnects;
    },
    text: () => messages.map((m) => m.raw).join("\n"),
    until(done, { timeoutMs = 10_000, what = "the expected live messages" } = {}) {
      // A snapshot: messages that arrive after `done` held are the follower's, not the answer's.
      if (done(messages)) return Promise.resolve([...messages]);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${transport.toUpperCase()} deadline of ${timeoutMs} ms passed waiting for ${what} with ${messages.length} messages: ${JSON.stringify(messages.map((m) => m.offset ?? "ephemeral"))}`));
        }, timeoutMs);
        const check = () => {
          if (!done(messages)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve([...messages]);
        };
        waiters.add(check);
      });
    },
    close() {
      closed = true;
      stopCurrent();
    },
  };
}

/** The URL a follower subscribes to: `/subscribe` (SSE) or `/ws` of a stream, with query parameters. */
export function liveUrl(baseUrl: string, transport: LiveTransport, streamPath: string, query: Record<string, string | number> = {}): string {
  const base = transport === "ws" ? baseUrl.replace(/^http/, "ws") : baseUrl;
  const url = new URL(`${base}/v1/streams/${encodeURIComponent(streamPath)}/${transport === "ws" ? "ws" : "subscribe"}`);
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, String(value));
  return url.toString();
}

/** Follows until `done` holds, then disconnects; a refused subscription answers its status and no messages. */
export async function collectLive(
  transport: LiveTransport,
  url: string,
  done: (messages: readonly LiveMessage[]) => boolean,
  options: FollowLiveOptions & { timeoutMs?: number } = {},
): Promise<{ status: number; messages: readonly LiveMessage[] }> {
  const follower = followLive(transport, url, options);
  try {
    const status = await follower.opened;
    if (status !== (transport === "sse" ? 200 : 101)) return { status, messages: [] };
    return { status, messages: await follower.until(done, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) };
  } finally {
    follower.close();
  }
}

/** A follower of one stream from its first offset that resumes after every drop, as a user's code would. */
export function resumingFollower(baseUrl: string, transport: LiveTransport, streamPath: string): LiveFollower {
  return followLive(transport, liveUrl(baseUrl, transport, streamPath, { fromOffset: 1 }), { reconnectAfterMs: 100 });
}
