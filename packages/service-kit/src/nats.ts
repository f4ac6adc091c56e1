// One NATS connection per service process, created in the composition root and passed down;
// reconnects forever so a restarted NATS node never kills a service, and waits for a NATS that
// is not up yet (start order in a pod or the quickstart does not matter).

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "pino";
import { natsInboxPrefix } from "./nats-permissions.ts";
import { natsServers, withoutCredentials } from "./nats-urls.ts";

export type { NatsConnection } from "@nats-io/nats-core";

export interface NatsConnectOptions {
  readonly url: string;
  readonly name: string;
  readonly user?: string;
  readonly pass?: string;
  readonly logger?: Logger;
  /**
   * The server delivers nothing this connection publishes back to its own subscriptions (NATS
   * `echo: false`). For a process that subscribes to subjects it also publishes on and never
   * wants its own messages there: each one delivered back is a socket read and a parse for a
   * message it drops.
   */
  readonly noEcho?: boolean;
}

/** How often a service still waiting for its first NATS connection says so. */
export const FIRST_CONNECT_NOTICE_MS = 5_000;

export async function connectNats(options: NatsConnectOptions): Promise<NatsConnection> {
  const servers = natsServers(options.url);
  // The first connection is waited for without end (see above), and the client reports nothing
  // until it has one: without this a service whose NATS is unreachable (a wrong URL, a network
  // policy) would log nothing at all while its start-up probe fails.
  const startedAt = Date.now();
  const notice = options.logger === undefined
    ? undefined
    : setInterval(() => options.logger?.warn({ servers: servers.map(withoutCredentials), connection: options.name, waitingMs: Date.now() - startedAt }, "NATS has not answered yet; still trying to connect"), FIRST_CONNECT_NOTICE_MS);
  notice?.unref();
  const nc = await connect({
    servers,
    name: options.name,
    // A user's replies come on its own inbox prefix, the only one its permissions let it read.
    ...(options.user === undefined ? {} : { user: options.user, pass: options.pass ?? "", inboxPrefix: natsInboxPrefix(options.user) }),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
    pingInterval: 5_000,
    // Each request would otherwise capture two stack traces up front (for a richer error should
    // it fail): measurable CPU on the hot path, where every append and read is a request. A
    // failed request still throws the same error types, with the server's message and cause.
    noAsyncTraces: true,
    ...(options.noEcho === true ? { noEcho: true } : {}),
  }).finally(() => clearInterval(notice));
  coalesceWrites(nc);
  const logger = options.logger;
  if (logger) {
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === "disconnect" || status.type === "reconnect" || status.type === "error") {
          logger.warn({ status: status.type, server: "server" in status ? status.server : undefined }, "nats connection status");
        }
      }
    })();
  }
  return nc;
}

const commandEncoder = new TextEncoder();

/**
 * Makes a nats.js connection write what it sends at most twice per turn of the event loop,
 * instead of once per microtask burst. nats.js flushes its outbound buffer in a microtask queued by the
 * first command after a flush, so commands issued from different async steps of one piece of
 * work (an append's publish, its key reservations, a work item, an ack) each became a socket
 * write of their own; on loopback a write also runs the receiver's side of TCP, and the peers
 * bench counted 6.3 writes per turn in the one-process reducer. Now the first burst of a turn
 * of the loop is flushed as nats.js would (a microtask later, so a lone command waits for
 * nothing), and every later burst of that turn waits for its end (`setImmediate`) and leaves
 * with the others in one write, in the same order. Flushing every burst at the turn's end cut
 * the writes more but cost a sequential turn 1 ms (one extra turn of the loop per hop). A
 * buffer past nats.js's own limit is flushed inline, as before, and close() flushes what is
 * waiting first.
 *
 * It replaces the connection's internal `protocol.sendCommand` (nats-core 3.x): when that shape
 * is not there (another version), the connection is left as it is and this returns false;
 * `packages/service-kit/test/nats-writes.int.test.ts` fails on such an upgrade.
 */
export function coalesceWrites(nc: NatsConnection): boolean {
  const protocol = (nc as unknown as { protocol?: Record<string, unknown> }).protocol as
    | { sendCommand: (cmd: string | Uint8Array, ...payloads: Uint8Array[]) => void; outbound: { length(): number; size(): number; fill(buf: Uint8Array, ...payloads: Uint8Array[]): void }; flushPending(): void; pendingLimit: number }
    | undefined;
  if (protocol === undefined || typeof protocol.sendCommand !== "function" || typeof protocol.flushPending !== "function" || typeof protocol.outbound?.fill !== "function") return false;
  // The first burst of a turn of the loop leaves as nats.js sends it (a microtask later: no
  // added latency for a lone command); bursts after it in the same turn wait for its end.
  let flushedThisTurn = false;
  let deferred = false;
  const flushNow = (): void => {
    protocol.flushPending();
    if (flushedThisTurn) return;
    flushedThisTurn = true;
    setImmediate(() => {
      flushedThisTurn = false;
    });
  };
  protocol.sendCommand = function (cmd, ...payloads) {
    const len = protocol.outbound.length();
    protocol.outbound.fill(typeof cmd === "string" ? commandEncoder.encode(cmd) : cmd, ...payloads);
    if (len === 0 && !deferred) {
      if (!flushedThisTurn) queueMicrotask(flushNow);
      else {
        deferred = true;
        setImmediate(() => {
          deferred = false;
          protocol.flushPending();
        });
      }
    } else if (protocol.outbound.size() >= protocol.pendingLimit) protocol.flushPending();
  };
  // What is still waiting for its turn leaves before the connection closes (drain flushes anyway).
  const close = nc.close.bind(nc);
  nc.close = () => {
    protocol.flushPending();
    return close();
  };
  return true;
}
