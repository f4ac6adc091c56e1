// The operations endpoint every service exposes: `/healthz` (the process is alive),
// `/readyz` (it is connected and serving), `/metrics` (Prometheus text format).

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Metrics } from "./metrics.ts";

export interface OpsServerOptions {
  readonly port: number;
  readonly host?: string;
  readonly metrics: Metrics;
  /**
   * Readiness probe: the conditions that do not hold, by name (`Readiness.unmet`). Empty answers
   * 200; otherwise 503 with the names in the body; a thrown error answers 503 too.
   */
  readonly unmet: () => readonly string[] | Promise<readonly string[]>;
}

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? "/").split("?")[0];
      if (path === "/healthz") {
        res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
      } else if (path === "/readyz") {
        const unmet = await Promise.resolve()
          .then(options.unmet)
          .catch((error: unknown) => [`the readiness probe (it threw: ${error instanceof Error ? error.message : String(error)})`]);
        if (unmet.length === 0) res.writeHead(200, { "content-type": "text/plain" }).end("ready\n");
        else res.writeHead(503, { "content-type": "text/plain" }).end(`not ready; unmet: ${unmet.join(", ")}\n`);
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
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
