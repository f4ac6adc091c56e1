// Connection-level defences of the HTTP server: header and body timeouts (a slowloris socket
// is closed within seconds instead of Node's minutes), and a `clientError` handler that answers
// a malformed request with a 400 when the socket can still take it and never logs the raw bytes
// (they may hold an Authorization header). Live streams are exempt from the request timeout:
// it covers receiving the request, and an SSE or upgrade request is complete once its headers are.

import type { IncomingMessage, Server, ServerOptions } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "@agentrt/service-kit";

export interface ConnectionTimeouts {
  /** Time to receive a request's headers. */
  readonly headersTimeoutMs: number;
  /** Time to receive a whole request (headers and body). */
  readonly requestTimeoutMs: number;
  /** Idle time of a kept-alive connection between requests. */
  readonly keepAliveTimeoutMs: number;
}

export const DEFAULT_TIMEOUTS: ConnectionTimeouts = { headersTimeoutMs: 5_000, requestTimeoutMs: 10_000, keepAliveTimeoutMs: 5_000 };

/** The node:http options that enforce the timeouts (Node checks them every checking interval). */
export function serverOptions(t: ConnectionTimeouts): ServerOptions {
  const headersTimeout = Math.min(t.headersTimeoutMs, t.requestTimeoutMs);
  return {
    headersTimeout,
    requestTimeout: t.requestTimeoutMs,
    keepAliveTimeout: t.keepAliveTimeoutMs,
    // The default interval (30 s) would let an expired socket live that much longer.
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(headersTimeout / 4))),
  };
}

const BAD_REQUEST = "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: 12\r\nconnection: close\r\n\r\nBad request\n";
const TIMEOUT = "HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\ncontent-length: 16\r\nconnection: close\r\n\r\nRequest timeout\n";

/** Handles malformed requests, silent sockets and socket failures on every connection of `server`. */
export function guardServer(server: Server, log: Logger, timeouts: ConnectionTimeouts = DEFAULT_TIMEOUTS): void {
  // Node's header timeout only runs once a request has begun: a socket that never sends a byte
  // would stay open forever. It gets the header timeout as an idle timeout until its first
  // request or upgrade; from then on Node's own timeouts (and keep-alive) take over.
  server.on("connection", (socket: Duplex & { setTimeout(ms: number): void }) => socket.setTimeout(timeouts.headersTimeoutMs));
  server.on("request", (req: IncomingMessage) => req.socket.setTimeout(0));
  server.on("upgrade", (req: IncomingMessage) => req.socket.setTimeout(0));
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Only the code: the error's rawPacket is the caller's bytes, headers included.
    log.debug({ code: error.code }, "client error");
    if (error.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.end(error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? TIMEOUT : BAD_REQUEST);
  });
}
