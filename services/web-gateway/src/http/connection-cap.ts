// The most connections a listener holds at once (MAX_CONNECTIONS), for HTTP and for gRPC alike.
// Timeouts end slow and idle connections, but only after they have been open a while: many
// opened at once could still spend the gateway's file descriptors and the memory each HTTP/2
// session keeps. Past the cap, node's listener closes a new connection as it arrives (no request
// is read from it); each is counted, and logged at most once a minute with how many there were.
// A connection the listener fails to accept (out of file descriptors) is logged, not thrown.

import type { Server } from "node:net";
import type { Logger } from "@agentrt/service-kit";

export const DEFAULT_MAX_CONNECTIONS = 10_000;
const LOG_EVERY_MS = 60_000;

export function capConnections(server: Server, options: { max: number; listener: "http" | "grpc"; log: Logger; onDrop: () => void; nowMs?: () => number }): void {
  const now = options.nowMs ?? Date.now;
  server.maxConnections = options.max;
  // A failed accept (EMFILE when the process is out of file descriptors, below the cap) is
  // emitted on the listener: unheard, it would end the process.
  server.on("error", (error: NodeJS.ErrnoException) => {
    options.log.error({ listener: options.listener, code: error.code, err: error }, "the listener could not accept a connection");
  });
  let unlogged = 0;
  let lastLogMs = Number.NEGATIVE_INFINITY;
  server.on("drop", () => {
    options.onDrop();
    unlogged++;
    if (now() - lastLogMs < LOG_EVERY_MS) return;
    lastLogMs = now();
    options.log.warn(
      { listener: options.listener, maxConnections: options.max, dropped: unlogged },
      "connections closed on arrival: the listener holds its most (MAX_CONNECTIONS); cap connections per client at the ingress",
    );
    unlogged = 0;
  });
}
