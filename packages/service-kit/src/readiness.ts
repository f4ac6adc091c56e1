// What `/readyz` answers. A service is ready while its NATS connection is CONNECTED (not merely
// "not closed": the client reconnects forever, so a service cut off from NATS would otherwise
// stay Ready and keep receiving traffic), every check the service adds holds (its consumers are
// running), and it has not begun to shut down. `/healthz` stays the liveness signal: a
// disconnected service is alive and reconnecting, not wedged.
//
// Each condition has a name, and a 503 names the ones that do not hold: an operator (or a test
// harness) waiting on a service that never turns ready reads why from the probe itself.

import type { NatsConnection } from "@nats-io/nats-core";

/** A service's own readiness conditions by name, e.g. `{ "work consumer running": () => … }`. */
export type ReadinessChecks = Readonly<Record<string, () => boolean>>;

export interface Readiness {
  /** True when every condition holds. */
  readonly ready: () => boolean;
  /** The conditions that do not hold now, by name (empty when ready). */
  readonly unmet: () => string[];
  /** True while the NATS connection is up (false from a disconnect until the reconnect). */
  readonly natsConnected: () => boolean;
  /** Marks the service as stopping: `/readyz` answers 503 from now on. */
  markStopping(): void;
}

/**
 * Follows `nc`'s status events. `checks` are the service's own conditions, e.g. "the work
 * consumer is running"; a throwing check counts as unmet.
 */
export function trackReadiness(nc: NatsConnection, checks: ReadinessChecks = {}): Readiness {
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
  const unmet = (): string[] => {
    const failing: string[] = [];
    if (stopping) failing.push("stopping");
    if (!natsConnected()) failing.push("NATS connected");
    for (const [name, check] of Object.entries(checks)) {
      let holds = false;
      try {
        holds = check();
      } catch {
        holds = false;
      }
      if (!holds) failing.push(name);
    }
    return failing;
  };
  return {
    natsConnected,
    unmet,
    ready: () => unmet().length === 0,
    markStopping: () => {
      stopping = true;
    },
  };
}
