// A 3-node (or N-node) JetStream cluster on loopback for chaos tests: each node has its own
// server_name, client/monitor/route ports and store dir; nodes can be killed, paused and
// restarted one at a time while the others keep serving.

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NatsNodeProcess, natsServerBinary } from "./node-process.ts";
import { freeLoopbackPorts } from "./ports.ts";
import { registerDir, unregisterDir } from "../process-registry.ts";
import { type NatsServer, handleFor } from "./server.ts";
import { waitFor } from "./wait.ts";

export interface NatsClusterOptions {
  readonly nodes?: number;
  readonly clusterName?: string;
  readonly readyTimeoutMs?: number;
}

export interface NatsCluster {
  readonly nodes: readonly NatsServer[];
  /** Every node's client URL, for `connect({ servers })`. */
  readonly servers: readonly string[];
  /** Resolves when a JetStream meta leader is elected and every running node agrees on it. */
  waitForMetaLeader(timeoutMs?: number): Promise<string>;
  /**
   * Every node running and back in the cluster: `/healthz` ok, which on 2.9 also requires every
   * stream and consumer replica on the node to be current. With `serverOnly`, the node's
   * JetStream has to be current with the meta leader only (`?js-server-only=true`): a replica
   * that lags for minutes after a restart (2.9 has them) does not count.
   */
  healthy(options?: { serverOnly?: boolean }): Promise<boolean>;
  /** Each node's `healthy` answer on its own, in `nodes` order (false for a node not running). */
  nodeHealth(options?: { serverOnly?: boolean }): Promise<boolean[]>;
  /** Kills every node and removes every store dir. Idempotent. */
  stop(): Promise<void>;
}

interface JszMeta {
  meta_cluster?: { leader?: string };
}

export async function startNatsCluster(options: NatsClusterOptions = {}): Promise<NatsCluster> {
  const binary = natsServerBinary();
  if (binary === undefined) throw new Error("nats-server was not found; a cluster needs the binary");
  const count = options.nodes ?? 3;
  const clusterName = options.clusterName ?? "agentrt-test-cluster";
  const root = mkdtempSync(join(tmpdir(), "agentrt-nats-cluster-"));
  registerDir(root);
  const ports = await freeLoopbackPorts(count * 3);
  const routePorts = ports.slice(2 * count);
  const processes = Array.from({ length: count }, (_, i) => {
    const dir = join(root, `n${i + 1}`);
    mkdirSync(dir, { recursive: true });
    return new NatsNodeProcess(binary, {
      serverName: `n${i + 1}`,
      port: ports[i] as number,
      monitorPort: ports[count + i] as number,
      dir,
      cluster: { name: clusterName, port: routePorts[i] as number, routePorts: routePorts.filter((_, j) => j !== i) },
    });
  });
  const stopAll = async () => {
    await Promise.all(processes.map((p) => p.signal("SIGKILL")));
    rmSync(root, { recursive: true, force: true });
    unregisterDir(root);
  };
  const nodes = processes.map((p) => handleFor(p, undefined, options.readyTimeoutMs ?? 30_000));
  let stopped = false;
  const cluster: NatsCluster = {
    nodes,
    servers: processes.map((p) => p.url),
    async waitForMetaLeader(timeoutMs = 30_000) {
      return await waitFor(
        async () => {
          const leaders = await Promise.all(
            processes
              .filter((p) => p.running)
              .map(async (p) => {
                const response = await fetch(`http://127.0.0.1:${p.config.monitorPort}/jsz`);
                const body = (await response.json()) as JszMeta;
                return body.meta_cluster?.leader ?? "";
              }),
          );
          const first = leaders[0];
          return first !== undefined && first.length > 0 && leaders.every((l) => l === first) ? first : undefined;
        },
        { timeoutMs, what: "a JetStream meta leader agreed by every running node" },
      );
    },
    async nodeHealth(options = {}) {
      return await Promise.all(processes.map(async (p) => p.running && (await p.healthz(options))));
    },
    async healthy(options = {}) {
      return (await cluster.nodeHealth(options)).every(Boolean);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopAll();
    },
  };
  try {
    for (const p of processes) p.spawn();
    await Promise.all(processes.map((p) => p.waitReady(options.readyTimeoutMs ?? 30_000)));
    await cluster.waitForMetaLeader(options.readyTimeoutMs ?? 30_000);
  } catch (error) {
    await stopAll();
    throw error;
  }
  return cluster;
}
