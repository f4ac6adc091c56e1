// The processes of the quickstart and the order they start in: every service needs NATS only,
// so the four start together once it is up; the example repo provider registers with the
// capability host, so it starts once the host is ready. Ports come from the environment
// (defaults below); in dev mode every listener binds loopback. Processes run from their
// precompiled bundles when setup.sh built them.

import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ChildSpec } from "./supervisor.ts";

export interface StackPorts {
  readonly http: number;
  readonly grpc: number;
  readonly ops: Readonly<Record<ServiceName, number>>;
}

export const SERVICES = ["agent-reducer", "llm-driver", "capability-host", "web-gateway"] as const;
export type ServiceName = (typeof SERVICES)[number];

/** The env keys that move each port, and their defaults. */
export const PORT_ENV = {
  http: ["HTTP_PORT", 8080],
  grpc: ["GRPC_PORT", 8081],
  "agent-reducer": ["REDUCER_OPS_PORT", 9461],
  "llm-driver": ["DRIVER_OPS_PORT", 9462],
  "capability-host": ["HOST_OPS_PORT", 9463],
  "web-gateway": ["GATEWAY_OPS_PORT", 9464],
} as const;

export function portsFromEnv(env: NodeJS.ProcessEnv): StackPorts {
  const read = (key: keyof typeof PORT_ENV): number => {
    const [name, fallback] = PORT_ENV[key];
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const port = Number(raw);
    if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error(`${name}=${raw} is not a port (an integer 1-65535)`);
    return port;
  };
  return {
    http: read("http"),
    grpc: read("grpc"),
    ops: { "agent-reducer": read("agent-reducer"), "llm-driver": read("llm-driver"), "capability-host": read("capability-host"), "web-gateway": read("web-gateway") },
  };
}

const LOOPBACK = "127.0.0.1";

export function stackChildren(options: {
  root: string;
  env: NodeJS.ProcessEnv;
  natsUrl: string;
  /** The child that provides NATS, when the stack runs one. */
  natsChild: string | undefined;
  ports: StackPorts;
  serviceEnv: (service: string) => Record<string, string>;
  /** The services' event keys (EVENT_KEYS_DIR): each signs its records, and reads only signed ones. None: neither. */
  eventKeysDir: string | undefined;
}): ChildSpec[] {
  const { root, env, natsUrl, natsChild, ports } = options;
  const common = { NATS_URL: natsUrl, LOG_LEVEL: env.LOG_LEVEL ?? "info", OPS_HOST: LOOPBACK, ...(options.eventKeysDir === undefined ? {} : { EVENT_KEYS_DIR: options.eventKeysDir }) };
  const afterNats = natsChild === undefined ? [] : [natsChild];
  // The precompiled bundle next to an entry (scripts/build-services.ts, run by setup.sh) starts
  // without transpiling; without one, or with AGENTRT_FROM_SOURCE=1, the entry runs through tsx.
  const node = (entry: string) => {
    const bundle = entry.replace(/main\.ts$/, "main.bundle.mjs");
    return env.AGENTRT_FROM_SOURCE !== "1" && existsSync(bundle) ? [bundle] : ["--import", "tsx", entry];
  };
  const extra: Record<ServiceName, Record<string, string>> = {
    "agent-reducer": {},
    // Ctrl-C should be quick: a reply under way gets 5 s to finish (the supervisor's grace is 10 s).
    "llm-driver": { LLM_DRAIN_MS: env.LLM_DRAIN_MS ?? "5000" },
    "capability-host": {},
    "web-gateway": {
      HTTP_HOST: LOOPBACK,
      HTTP_PORT: String(ports.http),
      GRPC_PORT: String(ports.grpc),
      AGENTRT_DEV_MODE: env.AGENTRT_DEV_MODE ?? "1",
      // setup.sh builds the UI; the gateway never runs vite on the start path.
      UI_BUILD_ON_START: "0",
    },
  };
  const children: ChildSpec[] = SERVICES.map((name) => {
    const entry = join(root, "services", name, "src", "main.ts");
    if (!existsSync(entry)) throw new Error(`missing ${entry}`);
    return {
      name,
      command: process.execPath,
      args: node(entry),
      env: { ...common, ...options.serviceEnv(name), OPS_PORT: String(ports.ops[name]), ...extra[name] },
      dependsOn: afterNats,
      ready: { kind: "http", url: `http://${LOOPBACK}:${ports.ops[name]}/readyz` },
    };
  });
  const repoProvider = join(root, "examples", "repo-provider", "src", "main.ts");
  if (existsSync(repoProvider)) {
    // The demo's `itx.repo`: this checkout as the repository, and a folder of sample pull requests.
    children.push({
      name: "repo-provider",
      command: process.execPath,
      args: node(repoProvider),
      env: {
        ...common,
        ...options.serviceEnv("repo-provider"),
        REPO_DIR: env.REPO_DIR ?? root,
        PULLS_DIR: env.PULLS_DIR ?? join(root, "examples", "repo-provider", "demo-pulls"),
      },
      dependsOn: ["capability-host"],
      ready: { kind: "line", pattern: /repo-provider ready/ },
    });
  }
  return children;
}
