// Where the stack's NATS comes from: the one at NATS_URL when it answers, otherwise a local
// nats-server with JetStream and its data under .data/nats, launched here. Kept apart from the
// supervisor so per-service NATS users (an auth config for the local server, and each
// service's NATS_USER / NATS_PASSWORD) can be added in this one place.

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { log } from "./output.ts";
import { reachable } from "./probes.ts";
import type { ChildSpec } from "./supervisor.ts";

export interface NatsPlan {
  /** What the services connect to. */
  readonly url: string;
  /** A nats-server for the supervisor to run, or undefined when NATS_URL already answers. */
  readonly child: ChildSpec | undefined;
  /** Extra env per service (e.g. its NATS user), by service name. */
  readonly serviceEnv: (service: string) => Record<string, string>;
}

function hostPort(url: string): { host: string; port: number } {
  const parsed = new URL(url.split(",")[0]!.trim().replace(/^nats:/, "http:"));
  return { host: parsed.hostname, port: Number(parsed.port || 4222) };
}

export async function planNats(root: string, env: NodeJS.ProcessEnv): Promise<NatsPlan> {
  const configured = env.NATS_URL ?? "nats://127.0.0.1:4222";
  const { host, port } = hostPort(configured);
  if (await reachable(host, port)) {
    log(`using NATS at ${configured}`);
    return { url: configured, child: undefined, serviceEnv: () => ({}) };
  }
  if (env.NATS_URL !== undefined) throw new Error(`NATS_URL=${configured} does not answer`);
  const dataDir = join(root, ".data", "nats");
  mkdirSync(dataDir, { recursive: true });
  const localPort = Number(env.AGENTRT_LOCAL_NATS_PORT ?? 4222);
  log(`no NATS at ${configured}; starting a local nats-server on 127.0.0.1:${localPort} (data in ${dataDir})`);
  return {
    url: `nats://127.0.0.1:${localPort}`,
    child: {
      name: "nats-server",
      command: "nats-server",
      args: ["-a", "127.0.0.1", "-p", String(localPort), "-js", "-sd", dataDir],
      env: {},
      dependsOn: [],
      ready: { kind: "tcp", host: "127.0.0.1", port: localPort },
    },
    serviceEnv: () => ({}),
  };
}
