// Where the stack's NATS comes from: the one at NATS_URL when it answers, otherwise a local
// nats-server with JetStream and its data under .data/nats, launched here. Kept apart from the
// supervisor so per-service NATS users (an auth config for the local server, and each
// service's NATS_USER / NATS_PASSWORD) can be added in this one place.

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { natsServers, serversWithoutCredentials } from "../../packages/service-kit/src/nats-urls.ts";
import { type LocalNatsAuth, natsUserEnv, prepareLocalNatsAuth } from "../nats-auth.ts";
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
  const parsed = new URL(natsServers(url)[0]!.replace(/^nats:/, "http:"));
  return { host: parsed.hostname, port: Number(parsed.port || 4222) };
}

export async function planNats(root: string, env: NodeJS.ProcessEnv): Promise<NatsPlan> {
  const configured = env.NATS_URL ?? "nats://127.0.0.1:4222";
  const { host, port } = hostPort(configured);
  const shown = serversWithoutCredentials(configured);
  if (await reachable(host, port)) {
    log(`using NATS at ${shown}`);
    log("that NATS is not started by the quickstart, so it cannot add per-service NATS users to it: services connect with the NATS_USER/NATS_PASSWORD of this environment (see docs/security.md)");
    return { url: configured, child: undefined, serviceEnv: () => ({}) };
  }
  if (env.NATS_URL !== undefined) throw new Error(`NATS_URL=${shown} does not answer`);
  const dataDir = join(root, ".data", "nats");
  mkdirSync(dataDir, { recursive: true });
  const localPort = Number(env.AGENTRT_LOCAL_NATS_PORT ?? 4222);
  log(`no NATS at ${shown}; starting a local nats-server on 127.0.0.1:${localPort} (data in ${dataDir})`);
  const auth: LocalNatsAuth = prepareLocalNatsAuth({ dataDir: join(root, ".data"), port: localPort, storeDir: dataDir });
  log(`NATS users per service (least privilege); passwords in ${auth.secretsPath}`);
  return {
    url: `nats://127.0.0.1:${localPort}`,
    child: {
      name: "nats-server",
      command: "nats-server",
      // The generated config listens on 127.0.0.1:<port> with JetStream in dataDir and the users.
      args: ["-c", auth.configPath],
      env: {},
      dependsOn: [],
      ready: { kind: "tcp", host: "127.0.0.1", port: localPort },
    },
    serviceEnv: (service) => natsUserEnv(auth, service),
  };
}
