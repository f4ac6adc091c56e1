// A whole agentrt system whose NATS has the generated per-service users: nats-server started
// with `renderNatsAuthorization` (random passwords), every service (and the repo provider) as
// its own process connecting as its own user, and an unrestricted `test` user for the test's
// own store connection. Used to prove the permission lists complete (a whole turn works) and
// tight (a service's user is refused what it does not need).

import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { JetStreamEventStore } from "@agentrt/streams";
import { NATS_SERVICE_USERS, renderNatsAuthorization, type NatsServiceUser } from "@agentrt/service-kit";
import { type FakeModel, type FakeModelOptions, freeLoopbackPort, type NatsServer, startFakeModel, startNatsServer, waitFor } from "@agentrt/testing";
import { ProcessGroup, type ServiceName, type ServiceProcess } from "../../support/processes.ts";
import { makeTestRepo, PARTITIONS } from "../../support/system.ts";

export interface NatsUsersSystem {
  readonly nats: NatsServer;
  readonly passwords: Readonly<Record<NatsServiceUser, string>>;
  /** The test's own, unrestricted connection and store. */
  readonly nc: NatsConnection;
  readonly store: JetStreamEventStore;
  readonly model: FakeModel;
  readonly processes: ProcessGroup;
  readonly gatewayUrl: string;
  /** Connects as one service's user. */
  connectAs(user: NatsServiceUser): Promise<NatsConnection>;
  /** nats-server log lines reporting a permissions violation. */
  violations(): string[];
  stop(): Promise<void>;
}

export const TEST_USER = { user: "test", password: randomBytes(12).toString("hex") };

export async function startNatsUsersSystem(
  options: { model?: FakeModelOptions; env?: Record<string, string>; /** Overrides of the gateway's env (e.g. auth on). */ gatewayEnv?: Record<string, string> } = {},
): Promise<NatsUsersSystem> {
  const passwords = Object.fromEntries(NATS_SERVICE_USERS.map((u) => [u, randomBytes(18).toString("base64url")])) as Record<NatsServiceUser, string>;
  // The whole server log goes to a file: the harness keeps only its last lines, and a violation
  // early in the run must still be found.
  const logFile = join(mkdtempSync(join(tmpdir(), "agentrt-nats-log-")), "nats-server.log");
  const nats = await startNatsServer({ extraConfig: `log_file: ${JSON.stringify(logFile)}\n${renderNatsAuthorization({ passwords, unrestricted: [TEST_USER] })}` });
  const nc = await connect({ servers: nats.url, user: TEST_USER.user, pass: TEST_USER.password });
  const store = await JetStreamEventStore.open(nc, { partitionCount: PARTITIONS });
  const model = await startFakeModel(options.model ?? {});
  const processes = new ProcessGroup();
  const common: Record<string, string> = {
    NATS_URL: nats.url,
    PARTITION_COUNT: String(PARTITIONS),
    NATS_STREAM_REPLICAS: "1",
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: "test-key",
    REDUCER_LEASE_TTL_MS: "4000",
    // Snapshots every few events, so the reducer's object-store grant is exercised too.
    REDUCER_SNAPSHOT_EVERY_EVENTS: "5",
    ...options.env,
  };
  const as = (user: NatsServiceUser) => ({ NATS_USER: user, NATS_PASSWORD: passwords[user] });
  const started: ServiceProcess[] = [];
  const add = async (name: string, service: ServiceName, user: NatsServiceUser, env: Record<string, string> = {}) => {
    started.push(processes.add(name, service, { ...common, ...as(user), ...env }, await freeLoopbackPort()));
  };
  await add("reducer", "agent-reducer", "agent-reducer");
  await add("driver", "llm-driver", "llm-driver");
  await add("host", "capability-host", "capability-host");
  const httpPort = await freeLoopbackPort();
  await add("gateway", "web-gateway", "web-gateway", { HTTP_PORT: String(httpPort), GRPC_PORT: "0", HTTP_HOST: "127.0.0.1", AGENTRT_DEV_MODE: "1", ...options.gatewayEnv });
  for (const proc of started) proc.start();
  await Promise.all(started.map((proc) => proc.waitReady(120_000)));
  // The provider registers with a running host (it gives up when nobody answers yet).
  const repo = makeTestRepo(3);
  const provider = processes.add("repo-provider", "repo-provider", { ...common, ...as("capability-provider"), REPO_DIR: repo, PULLS_DIR: join(repo, ".pulls") }, undefined, /repo-provider ready/);
  await provider.start().waitReady(60_000);
  const gatewayUrl = `http://127.0.0.1:${httpPort}`;
  await waitFor(async () => (await fetch(`${gatewayUrl}/v1/openapi.json`).catch(() => undefined))?.ok === true, { timeoutMs: 60_000, intervalMs: 200 });
  return {
    nats,
    passwords,
    nc,
    store,
    model,
    processes,
    gatewayUrl,
    connectAs: (user) => connect({ servers: nats.url, user, pass: passwords[user], maxReconnectAttempts: 0 }),
    violations: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "").split("\n").filter((line) => /violation/i.test(line)),
    async stop() {
      await processes.stopAll();
      await store.close().catch(() => undefined);
      await nc.close().catch(() => undefined);
      await model.close();
      await nats.stop();
    },
  };
}
