// One NATS connection per service process, created in the composition root and passed down;
// reconnects forever so a restarted NATS node never kills a service, and waits for a NATS that
// is not up yet (start order in a pod or the quickstart does not matter).

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "pino";

export type { NatsConnection } from "@nats-io/nats-core";

export async function connectNats(options: { url: string; name: string; user?: string; pass?: string; logger?: Logger }): Promise<NatsConnection> {
  const nc = await connect({
    servers: options.url.split(",").map((s) => s.trim()),
    name: options.name,
    ...(options.user === undefined ? {} : { user: options.user, pass: options.pass ?? "" }),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
    pingInterval: 5_000,
    // Each request would otherwise capture two stack traces up front (for a richer error should
    // it fail): measurable CPU on the hot path, where every append and read is a request. A
    // failed request still throws the same error types, with the server's message and cause.
    noAsyncTraces: true,
  });
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
