// A throwaway nats-server with JetStream for one test file: own temp store dir, free loopback
// ports, readiness via `/healthz`, and teardown that kills the process and removes the dir
// (also at process exit if a test forgot or failed). When no nats-server binary exists but a
// container engine does, it falls back to a testcontainers-started server.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNatsContainer } from "./container.ts";
import { NatsNodeProcess, ProcessExitedError, natsServerBinary } from "./node-process.ts";
import { freeLoopbackPorts } from "./ports.ts";
import { registerDir, unregisterDir } from "../process-registry.ts";

export interface NatsServerOptions {
  /** Name in `server_name` (default `agentrt-test`). */
  readonly serverName?: string;
  /** Log protocol traffic into the captured log (see `logs()`). */
  readonly debug?: boolean;
  /** Readiness deadline (default 15 s). */
  readonly readyTimeoutMs?: number;
  /** Appended to the server's config file verbatim (e.g. an `authorization` block). */
  readonly extraConfig?: string;
}

export interface NatsServer {
  /** Client URL, e.g. `nats://127.0.0.1:41233`. */
  readonly url: string;
  readonly port: number;
  /** Monitoring port serving `/healthz`, `/varz`, `/jsz`. */
  readonly monitorPort: number;
  /** The JetStream store dir (inside the server's own temp dir). */
  readonly storeDir: string;
  readonly serverName: string;
  readonly pid: number | undefined;
  readonly running: boolean;
  /** Kills the server and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
  /** Sends a signal (SIGKILL, SIGTERM, SIGSTOP, SIGCONT…); terminating ones wait for exit. The dir is kept. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Stops the server if it runs, starts it again on the same ports and store, waits until ready. */
  restart(): Promise<void>;
  /** The last lines the server logged. */
  logs(): string;
}

const BIND_RETRIES = 3;

export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServer> {
  const binary = natsServerBinary();
  if (binary === undefined) {
    const container = await startNatsContainer();
    if (container !== undefined) return container;
    throw new Error("nats-server was not found (looked at NATS_SERVER_BIN, /usr/sbin, /usr/local/bin, PATH) and no container engine is reachable");
  }
  const dir = mkdtempSync(join(tmpdir(), "agentrt-nats-"));
  registerDir(dir);
  let lastError: unknown;
  for (let attempt = 0; attempt < BIND_RETRIES; attempt++) {
    const [port, monitorPort] = (await freeLoopbackPorts(2)) as [number, number];
    const node = new NatsNodeProcess(binary, {
      serverName: options.serverName ?? "agentrt-test",
      port,
      monitorPort,
      dir,
      ...(options.debug === undefined ? {} : { debug: options.debug }),
      ...(options.extraConfig === undefined ? {} : { extraConfig: options.extraConfig }),
    });
    node.spawn();
    try {
      await node.waitReady(options.readyTimeoutMs);
      return handleFor(node, dir, options.readyTimeoutMs);
    } catch (error) {
      lastError = error;
      await node.signal("SIGKILL");
      // Another process took one of our ports between choosing and binding: choose again.
      if (!(error instanceof ProcessExitedError && /address already in use/i.test(error.message))) break;
    }
  }
  rmSync(dir, { recursive: true, force: true });
  unregisterDir(dir);
  throw lastError;
}

export function handleFor(node: NatsNodeProcess, dir: string | undefined, readyTimeoutMs?: number): NatsServer {
  let stopped = false;
  return {
    url: node.url,
    port: node.config.port,
    monitorPort: node.config.monitorPort,
    storeDir: join(node.config.dir, "jetstream"),
    serverName: node.config.serverName,
    get pid() {
      return node.pid;
    },
    get running() {
      return node.running;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      // The store is thrown away, so there is nothing to shut down gracefully for.
      await node.signal("SIGKILL");
      if (dir !== undefined) {
        rmSync(dir, { recursive: true, force: true });
        unregisterDir(dir);
      }
    },
    async kill(signal: NodeJS.Signals = "SIGKILL") {
      await node.signal(signal);
    },
    async restart() {
      if (stopped) throw new Error(`nats-server ${node.config.serverName} was stopped; start a new one`);
      if (node.running) await node.signal("SIGTERM");
      node.spawn();
      await node.waitReady(readyTimeoutMs);
    },
    logs: () => node.logs(),
  };
}
