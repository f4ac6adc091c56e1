// Live streams to browsers and tools. SSE: each durable event is one message whose `id` is
// its offset, so a reconnecting EventSource sends `Last-Event-ID` and resumes at the next
// offset with no gap and no duplicate; live-lane (ephemeral) events carry no id and so never
// move the resume point. WebSocket: the same events as JSON text frames; a client resumes by
// reconnecting with `fromOffset = last offset + 1`. The socket is the caller's to reset at any
// moment (while an upgrade is being refused, mid-stream): every socket and WebSocket here has an
// `error` listener, and a client's data frames (the stream is one-way) close it with 1003.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "@agentrt/service-kit";
import { WebSocketServer, type WebSocket } from "ws";
import type { AgentEvent } from "@agentrt/contract";
import type { Subscription } from "@agentrt/streams";
import { eventJson } from "../api/live-hub.ts";
import { classifyError, GatewayError, invalidRequest } from "../errors.ts";
import { BROWSER_HEADERS } from "./browser-guards.ts";
import { acquireLiveSlot, prepare, type PipelineDeps } from "./pipeline.ts";
import { sanitizeUrl } from "./redact.ts";
import { lastEventIdSchema } from "../api/schemas.ts";

export const HEARTBEAT_MS = 15_000;
/** A WebSocket client this far behind is disconnected (it resumes from its last offset). */
export const MAX_WS_BUFFERED_BYTES = 8 * 1024 * 1024;
/**
 * How long a WebSocket being closed may take to answer the close before it is cut off. A client
 * that stopped reading never sees the close frame, queued behind what it did not read; ws alone
 * waits 30 s, holding that backlog while the slot (which waits for the socket) stays taken.
 */
export const WS_CLOSE_GRACE_MS = 5_000;

/** The live streams' timings (tests shorten them). */
export interface LiveTimings {
  readonly heartbeatMs: number;
  readonly closeGraceMs: number;
}

const DEFAULT_LIVE_TIMINGS: LiveTimings = { heartbeatMs: HEARTBEAT_MS, closeGraceMs: WS_CLOSE_GRACE_MS };

/** The offset to start from: `Last-Event-ID` (a reconnect) wins over the query's fromOffset. */
export function resumeOffset(req: IncomingMessage, fromOffset: number | undefined): number {
  const header = req.headers["last-event-id"];
  if (typeof header === "string" && header.trim() !== "") {
    // As the query's offsets: decimal digits (Number() had taken "0x2" and "1e1").
    const last = lastEventIdSchema.safeParse(header);
    if (!last.success) {
      throw new GatewayError("invalid_request", `Last-Event-ID must be a non-negative integer offset in decimal digits, got ${JSON.stringify(header.slice(0, 64))}.`, {
        issues: [{ path: "headers.last-event-id", message: "must be a non-negative integer in decimal digits" }],
      });
    }
    return last.data + 1;
  }
  return fromOffset ?? 1;
}

export function sseFrame(event: AgentEvent): string {
  const data = eventJson(event);
  return event.ephemeral === true ? `data: ${data}\n\n` : `id: ${event.offset}\ndata: ${data}\n\n`;
}

/** Streams a subscription as SSE until the client goes away. */
export async function pipeSse(req: IncomingMessage, res: ServerResponse, subscription: Subscription): Promise<void> {
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  res.write("retry: 1000\n\n");
  const heartbeat = setInterval(() => res.write(": ping\n\n"), HEARTBEAT_MS);
  const stop = () => void subscription.close();
  res.on("close", stop);
  // A client that left while the subscription was being opened fired `close` already: without
  // this the loop would wait for events that have nobody to go to, holding its slot forever.
  if (res.destroyed || req.destroyed) stop();
  try {
    for await (const event of subscription) {
      if (res.destroyed) break;
      if (!res.write(sseFrame(event))) await new Promise<void>((resolve) => res.once("drain", resolve).once("close", resolve));
    }
  } finally {
    clearInterval(heartbeat);
    res.off("close", stop);
    await subscription.close();
    res.end();
  }
}

/** Accepts WebSocket upgrades for `websocket` routes, after the same auth and parsing as HTTP. */
export function createUpgradeHandler(deps: PipelineDeps, log: Logger, timings: LiveTimings = DEFAULT_LIVE_TIMINGS) {
  const { metrics } = deps;
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  const handler = async (req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    // node:http drops its own socket listeners before emitting `upgrade`: without this, a
    // client resetting the connection while we decide would be an unhandled `error`.
    socket.on("error", (error: NodeJS.ErrnoException) => log.debug({ code: error.code }, "upgrade socket error"));
    let subscription: Subscription;
    let release = () => {};
    try {
      assertHandshake(req);
      const { route, input, principal } = await prepare(deps, req, "upgrade");
      release = acquireLiveSlot(deps, principal, req.socket.remoteAddress, () => socket.destroy());
      subscription = await route.handle({ ...input, principal, req });
    } catch (error) {
      release();
      log.debug({ code: classifyError(error).body.error.code, url: sanitizeUrl(req.url) }, "upgrade refused");
      refuseUpgrade(socket, error);
      return;
    }
    // Until the handshake completes, the socket closing (a reset, or ws refusing it) frees the slot.
    let upgraded = false;
    const abandon = () => {
      if (upgraded) return;
      release();
      void subscription.close();
    };
    if (socket.destroyed) return abandon();
    socket.once("close", abandon);
    wss.handleUpgrade(req, socket, head, (ws) => {
      upgraded = true;
      socket.off("close", abandon);
      metrics.liveOpened("websocket");
      // The slot is held until the socket has closed: its backlog is in memory until then.
      void pumpWebSocket(ws, subscription, log, timings).finally(() => {
        release();
        metrics.liveClosed("websocket");
      });
    });
  };
  return { handler, close: () => wss.close() };
}

/** The handshake fields ws would refuse anyway, checked before any key, slot or subscription is spent. */
function assertHandshake(req: IncomingMessage): void {
  const key = req.headers["sec-websocket-key"];
  const version = req.headers["sec-websocket-version"];
  const problems: Array<{ path: string; message: string }> = [];
  if (req.method !== "GET") problems.push({ path: "method", message: "must be GET" });
  if (req.headers.upgrade?.toLowerCase() !== "websocket") problems.push({ path: "headers.upgrade", message: "must be websocket" });
  if (typeof key !== "string" || !/^[+/0-9A-Za-z]{22}==$/.test(key)) problems.push({ path: "headers.sec-websocket-key", message: "must be 16 bytes in base64" });
  if (version !== "13" && version !== "8") problems.push({ path: "headers.sec-websocket-version", message: "must be 13" });
  if (problems.length > 0) throw invalidRequest("WebSocket handshake", problems);
}

function refuseUpgrade(socket: Duplex, error: unknown): void {
  const classified = classifyError(error);
  const body = JSON.stringify(classified.body);
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  // The same headers as every HTTP answer (browser-guards.ts): a refusal is an answer too.
  const browser = Object.entries(BROWSER_HEADERS).map(([name, value]) => `${name}: ${value}\r\n`).join("");
  socket.end(
    `HTTP/1.1 ${classified.http} Error\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${browser}connection: close\r\n\r\n${body}`,
  );
}

async function pumpWebSocket(ws: WebSocket, subscription: Subscription, log: Logger, timings: LiveTimings): Promise<void> {
  const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
  // Bad frames (oversized, bad opcode, invalid UTF-8) make ws emit `error` and close with 1002/1009.
  ws.on("error", (error: Error & { code?: string }) => log.debug({ code: error.code, message: error.message }, "websocket protocol error"));
  // The first message ends it; ws goes on parsing what the client sent after: ignored.
  ws.once("message", () => endWebSocket(ws, 1003, "this stream accepts no messages; reconnect with fromOffset to resume", timings));
  ws.on("close", () => void subscription.close());
  // A peer that answered no ping since the last one is gone without closing (a dropped network):
  // cut off now, not when TCP gives up retransmitting, minutes later.
  let answered = true;
  ws.on("pong", () => (answered = true));
  const heartbeat = setInterval(() => {
    if (!answered) return ws.terminate();
    answered = false;
    ws.ping();
  }, timings.heartbeatMs);
  try {
    for await (const event of subscription) {
      if (ws.readyState !== ws.OPEN) break;
      if (ws.bufferedAmount > MAX_WS_BUFFERED_BYTES) {
        endWebSocket(ws, 1013, "client too slow; reconnect from your last offset", timings);
        break;
      }
      ws.send(eventJson(event));
    }
  } catch (error) {
    log.warn({ err: error }, "websocket subscription failed");
    endWebSocket(ws, 1011, "subscription failed", timings);
  } finally {
    clearInterval(heartbeat);
    await subscription.close();
    endWebSocket(ws, 1001, "the stream ended", timings);
    await closed;
  }
}

/** WebSockets being ended: each gets one close and one cut-off timer, however often it is ended. */
const ending = new WeakSet<WebSocket>();

/** Closes a WebSocket, cut off if the peer has not answered the close within the grace. */
function endWebSocket(ws: WebSocket, code: number, reason: string, timings: LiveTimings): void {
  if (ws.readyState === ws.CLOSED || ending.has(ws)) return;
  ending.add(ws);
  if (ws.readyState === ws.OPEN) ws.close(code, reason);
  const cutOff = setTimeout(() => ws.terminate(), timings.closeGraceMs);
  ws.once("close", () => clearTimeout(cutOff));
}
