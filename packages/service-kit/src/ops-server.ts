// The operations endpoint every service exposes: `/healthz` (the process is alive),
// `/readyz` (it is connected and serving), `/metrics` (Prometheus text format). A service opens
// it first, before it connects to NATS: a start-up that waits for NATS (a fresh install whose
// volumes are still being provisioned, a whole cluster restarting) is alive, so a startup or
// liveness probe must not kill it meanwhile; `/readyz` says "starting" until `ready` is given the
// service's own conditions.

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Metrics } from "./metrics.ts";

export interface OpsServerOptions {
  readonly port: number;
  readonly host?: string;
  readonly metrics: Metrics;
  /**
   * Readiness probe: the conditions that do not hold, by name (`Readiness.unmet`). Empty answers
   * 200; otherwise 503 with the names in the body; a thrown error answers 503 too. Until given
   * (here or by `ready`), `/readyz` answers 503 naming the start-up.
   */
  readonly unmet?: Unmet;
}

type Unmet = () => readonly string[] | Promise<readonly string[]>;

/** What `/readyz` names while the service is still starting. */
export const STARTING_UP = "start-up (connecting to NATS and opening its streams)";

export interface OpsServer {
  readonly port: number;
  /** The service has started: from now on `/readyz` answers from these conditions. */
  ready(unmet: Unmet): void;
  close(): Promise<void>;
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  let unmet: Unmet = options.unmet ?? (() => [STARTING_UP]);
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? "/").split("?")[0];
      if (path === "/healthz") {
        res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
      } else if (path === "/readyz") {
        const names = await Promise.resolve()
          .then(unmet)
          .catch((error: unknown) => [`the readiness probe (it threw: ${error instanceof Error ? error.message : String(error)})`]);
        if (names.length === 0) res.writeHead(200, { "content-type": "text/plain" }).end("ready\n");
        else res.writeHead(503, { "content-type": "text/plain" }).end(`not ready; unmet: ${names.join(", ")}\n`);
      } else if (path === "/metrics") {
        const body = await options.metrics.registry.metrics();
        res.writeHead(200, { "content-type": options.metrics.registry.contentType }).end(body);
      } else {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      }
    })().catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "0.0.0.0", () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    ready(conditions) {
      unmet = conditions;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
