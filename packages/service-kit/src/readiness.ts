// What `/readyz` answers. A service is ready while its NATS connection is CONNECTED (not merely
// "not closed": the client reconnects forever, so a service cut off from NATS would otherwise
// stay Ready and keep receiving traffic), every check the service adds holds (its consumers are
// running), and it has not begun to shut down. `/healthz` stays the liveness signal: a
// disconnected service is alive and reconnecting, not wedged.

import type { NatsConnection } from "@nats-io/nats-core";

export interface Readiness {
  /** The probe the ops server calls. */
  readonly ready: () => boolean;
  /** True while the NATS connection is up (false from a disconnect until the reconnect). */
  readonly natsConnected: () => boolean;
  /** Marks the service as stopping: `/readyz` answers 503 from now on. */
  markStopping(): void;
}

/**
 * Follows `nc`'s status events. `checks` are the service's own conditions, e.g. "the work
 * consumer is running"; a throwing check counts as not ready.
 */
export function trackReadiness(nc: NatsConnection, checks: ReadonlyArray<() => boolean> = []): Readiness {
  let connected = !nc.isClosed();
  let stopping = false;
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect" || status.type === "close") connected = false;
      else if (status.type === "reconnect") connected = true;
    }
  })();
  void nc.closed().then(() => {
    connected = false;
  });
  const natsConnected = () => connected && !nc.isClosed();
  return {
    natsConnected,
    ready: () => {
      if (stopping || !natsConnected()) return false;
      return checks.every((check) => {
        try {
          return check();
        } catch {
          return false;
        }
      });
    },
    markStopping: () => {
      stopping = true;
    },
  };
}
