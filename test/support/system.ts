// A whole agentrt system for e2e and chaos tests: a real nats-server (or a 3-node cluster),
// the fake OpenAI model, and every service as its own process, each replaceable by name.

import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { JetStreamEventStore, type RecordSigning } from "@agentrt/streams/jetstream";
import {
  type FakeModel,
  type FakeModelOptions,
  freeLoopbackPort,
  type NatsCluster,
  type NatsServer,
  startFakeModel,
  startNatsCluster,
  startNatsServer,
  waitFor,
} from "@agentrt/testing";
import type { AgentEvent } from "@agentrt/contract";
import { natsServers } from "@agentrt/service-kit";
import { ProcessGroup, type ServiceName, type ServiceProcess, waitReadySupervised } from "./processes.ts";
import { waitForAssistant } from "./turns.ts";

export const PARTITIONS = 8;

export interface SystemOptions {
  readonly reducers?: number;
  readonly drivers?: number;
  readonly hosts?: number;
  readonly gateway?: boolean;
  /** How many gateway replicas (`gateway: true` alone starts one). */
  readonly gateways?: number;
  readonly repoProvider?: { readonly openPulls: number } | false;
  readonly model?: FakeModelOptions;
  /** Client URLs of an externally started NATS; default: one harness server. */
  readonly natsServers?: readonly string[];
  /** Run on a 3-node JetStream cluster of the harness (replicas default to 3); stop() ends it too. */
  readonly cluster?: boolean;
  readonly env?: Record<string, string>;
  /** Overrides of the gateway's env (auth on, a keys file, limits). */
  readonly gatewayEnv?: Record<string, string>;
  /** Env added per service (its own NATS user, say). */
  readonly envFor?: (service: ServiceName) => Record<string, string>;
  /** Appended to the harness nats-server's config (authorization blocks, a log file). */
  readonly natsExtraConfig?: string;
  /** The test's own connection's credentials, when the server has users. */
  readonly testUser?: { readonly user: string; readonly password: string };
  /** How the test's own store signs and checks records, when the services require signed ones. */
  readonly storeSigning?: RecordSigning;
  readonly replicas?: number;
  /**
   * Start services as a supervisor would: one that fails at start-up is started again (see
   * `waitReadySupervised`), and the crash is reported here.
   */
  readonly onStartupCrash?: (what: string) => void;
  /** Run the services from their precompiled bundles (as the quickstart and the image do), not tsx. */
  readonly fromBundles?: boolean;
  /** Keep every byte each service writes (a diagnosis of a long run needs all of it), not just the tail. */
  readonly keepAllOutput?: boolean;
  /** Node options every service process starts with (`--cpu-prof`, say). */
  readonly nodeArgs?: readonly string[];
  /**
   * How long the services may take, all together, to be ready (default 100 s: under the e2e
   * hooks' 120 s, so that a start-up that hangs is reported here, with each service's state,
   * and not as a bare hook timeout).
   */
  readonly startupTimeoutMs?: number;
}

export const DEFAULT_STARTUP_TIMEOUT_MS = 100_000;

export interface System {
  readonly nats: NatsServer | undefined;
  /** The harness cluster when started with `cluster: true` (its nodes can be killed and restarted). */
  readonly cluster: NatsCluster | undefined;
  readonly natsUrl: string;
  readonly nc: NatsConnection;
  readonly store: JetStreamEventStore;
  readonly model: FakeModel;
  readonly processes: ProcessGroup;
  readonly gatewayUrl: string | undefined;
  /** Every gateway replica's base URL (the first is `gatewayUrl`). */
  readonly gatewayUrls: readonly string[];
  readonly repoPath: string | undefined;
  stop(): Promise<void>;
}

/** A git repository with `openPulls` open and two closed pull-request records, for `repo`. */
export function makeTestRepo(openPulls: number): string {
  const dir = mkdtempSync(join(tmpdir(), "agentrt-repo-"));
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  git("init", "-q", "-b", "main");
  writeFileSync(join(dir, "README.md"), "# demo\n");
  git("add", ".");
  git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init");
  const pulls = join(dir, ".pulls");
  mkdirSync(pulls);
  for (let i = 1; i <= openPulls + 2; i += 1) {
    writeFileSync(join(pulls, `${i}.json`), JSON.stringify({ number: i, title: `PR ${i}`, state: i <= openPulls ? "open" : "closed", author: "dev" }));
  }
  return dir;
}

/** Waits for an agent's answer; on timeout prints the stream and every service's warnings. */
export async function waitForAnswer(system: System, path: string, contains: string, timeoutMs: number): Promise<AgentEvent> {
  try {
    return await waitForAssistant(system.store, path, contains, timeoutMs);
  } catch (error) {
    const events = await system.store.read(path).catch(() => []);
    process.stdout.write(`STUCK ${path} waiting for "${contains}": ${JSON.stringify(events.map((e) => [e.offset, e.type, e.idempotencyKey ?? ""]))}\n`);
    process.stdout.write(`${system.processes.all.map((p) => `--- ${p.name} (running=${p.running})\n${p.logs().split("\n").filter((l) => /"level":(40|50|60)/.test(l)).slice(-15).join("\n")}`).join("\n")}\n`);
    // The same, short, in the error itself: a CI log kept only in part keeps its failures' messages.
    const tail = events.slice(-12).map((e) => [e.offset, e.type, e.createdAt.slice(11, 23), e.idempotencyKey ?? ""]);
    const said = system.processes.all.flatMap((p) => p.logs().split("\n").filter((l) => /"level":(40|50|60)/.test(l)).slice(-2).map((l) => `${p.name}: ${briefLogLine(l)}`));
    throw new Error(`${(error as Error).message}; ${path} ends ${JSON.stringify(tail)}; last warnings: ${said.join(" | ")}`, { cause: error });
  }
}

/** A JSON log line cut to its time, message and error message. */
export function briefLogLine(line: string): string {
  try {
    const entry = JSON.parse(line) as { time?: number; msg?: string; err?: { message?: string } };
    return `${entry.time === undefined ? "" : new Date(entry.time).toISOString().slice(11, 23)} ${entry.msg ?? ""}${entry.err?.message === undefined ? "" : ` (${entry.err.message.slice(0, 160)})`}`;
  } catch {
    return line.slice(0, 200);
  }
}

export async function startSystem(options: SystemOptions = {}): Promise<System> {
  // What has started so far, stopped in reverse when a later step fails: a start-up that fails
  // leaves nothing running behind it (not even until the test process ends).
  const undo: (() => Promise<unknown>)[] = [];
  try {
    return await startSystemSteps(options, undo);
  } catch (error) {
    for (const step of undo.reverse()) await step().catch(() => undefined);
    throw error;
  }
}

async function startSystemSteps(options: SystemOptions, undo: (() => Promise<unknown>)[]): Promise<System> {
  const cluster = options.cluster === true ? await startNatsCluster({ nodes: 3 }) : undefined;
  if (cluster !== undefined) undo.push(() => cluster.stop());
  const external = options.natsServers ?? cluster?.servers;
  const nats = external ? undefined : await startNatsServer(options.natsExtraConfig === undefined ? {} : { extraConfig: options.natsExtraConfig });
  if (nats !== undefined) undo.push(() => nats.stop());
  const natsUrl = external ? external.join(",") : nats!.url;
  const credentials = options.testUser === undefined ? {} : { user: options.testUser.user, pass: options.testUser.password };
  const nc = await connect({ servers: natsServers(natsUrl), maxReconnectAttempts: -1, reconnectTimeWait: 250, ...credentials });
  undo.push(() => nc.close());
  const replicas = options.replicas ?? (cluster === undefined ? 1 : 3);
  const store = await JetStreamEventStore.open(nc, { partitionCount: PARTITIONS, replicas, ...(options.storeSigning === undefined ? {} : { signing: options.storeSigning }) });
  undo.push(() => store.close());
  const model = await startFakeModel(options.model ?? {});
  undo.push(() => model.close());
  const processes = new ProcessGroup();
  undo.push(() => processes.stopAll());
  const common: Record<string, string> = {
    NATS_URL: natsUrl,
    OPS_PORT: "0",
    PARTITION_COUNT: String(PARTITIONS),
    NATS_STREAM_REPLICAS: String(replicas),
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: "test-key",
    REDUCER_LEASE_TTL_MS: "4000",
    ...options.env,
  };
  const envOf = (service: ServiceName, own: Record<string, string> = {}) => ({ ...common, ...options.envFor?.(service), ...own });
  const how = { ...(options.fromBundles === true ? { fromBundle: true } : {}), ...(options.keepAllOutput === true ? { keepAllOutput: true } : {}), ...(options.nodeArgs === undefined ? {} : { nodeArgs: options.nodeArgs }) };
  const started: ServiceProcess[] = [];
  for (let i = 0; i < (options.reducers ?? 1); i += 1) {
    started.push(processes.add(`reducer-${i + 1}`, "agent-reducer", envOf("agent-reducer", { REDUCER_ID: `reducer-${i + 1}` }), await freeLoopbackPort(), undefined, how));
  }
  for (let i = 0; i < (options.drivers ?? 1); i += 1) started.push(processes.add(`driver-${i + 1}`, "llm-driver", envOf("llm-driver"), await freeLoopbackPort(), undefined, how));
  for (let i = 0; i < (options.hosts ?? 0); i += 1) started.push(processes.add(`host-${i + 1}`, "capability-host", envOf("capability-host"), await freeLoopbackPort(), undefined, how));
  const gatewayUrls: string[] = [];
  const gateways = options.gateways ?? (options.gateway ? 1 : 0);
  for (let i = 0; i < gateways; i += 1) {
    const port = await freeLoopbackPort();
    gatewayUrls.push(`http://127.0.0.1:${port}`);
    const gatewayEnv = { HTTP_PORT: String(port), GRPC_PORT: "0", HTTP_HOST: "127.0.0.1", AGENTRT_DEV_MODE: "1", ...options.gatewayEnv };
    started.push(processes.add(i === 0 ? "gateway" : `gateway-${i + 1}`, "web-gateway", envOf("web-gateway", gatewayEnv), await freeLoopbackPort(), undefined, how));
  }
  const gatewayUrl = gatewayUrls[0];
  const timeoutMs = options.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(0, deadline - Date.now());
  for (const proc of started) proc.start();
  // Nothing is sent until every service answers /readyz: on a loaded machine a cold start
  // takes seconds, and a test must measure the system, not its boot.
  const onCrash = options.onStartupCrash;
  const ready = (proc: ServiceProcess) => (onCrash ? waitReadySupervised(proc, onCrash, undefined, deadline) : proc.waitReady(left()));
  let repoPath: string | undefined;
  try {
    await Promise.all(started.map(ready));
    if (options.repoProvider) {
      // After the host is ready, so the provider's first registration finds it.
      repoPath = makeTestRepo(options.repoProvider.openPulls);
      const provider = processes.add("repo-provider", "repo-provider", envOf("repo-provider", { REPO_DIR: repoPath, PULLS_DIR: join(repoPath, ".pulls") }), undefined, /repo-provider ready/, how);
      provider.start();
      await ready(provider);
    }
    for (const url of gatewayUrls) {
      await waitFor(async () => (await fetch(`${url}/v1/openapi.json`).catch(() => undefined))?.ok === true, { timeoutMs: left(), intervalMs: 200 }).catch(() => {
        throw new Error(`${url}/v1/openapi.json did not answer 200`);
      });
    }
  } catch (error) {
    // Every service's state, not only the one that failed first: the one that hangs is often
    // waiting for another.
    const first = (error instanceof Error ? error.message : String(error)).split("\n")[0]?.replace(/:$/, "");
    throw new Error(`the system was not ready within ${timeoutMs} ms (first: ${first})\n${processes.all.map((proc) => proc.status()).join("\n")}`, { cause: error });
  }
  return {
    nats,
    cluster,
    natsUrl,
    nc,
    store,
    model,
    processes,
    gatewayUrl,
    gatewayUrls,
    repoPath,
    async stop() {
      await processes.stopAll();
      await store.close().catch(() => undefined);
      await nc.close().catch(() => undefined);
      await model.close();
      await nats?.stop();
      await cluster?.stop();
      if (repoPath !== undefined) rmSync(repoPath, { recursive: true, force: true });
    },
  };
}
