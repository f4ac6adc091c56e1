// A system for security tests: a real nats-server, the fake model, and the reducer, driver
// and gateway as real processes — the gateway with auth ON and the API keys the test mints.
// (test/support/system.ts always starts its gateway in dev mode.)

import { JetStreamEventStore } from "@agentrt/streams";
import { type FakeModel, freeLoopbackPort, type NatsServer, startFakeModel, startNatsServer, waitFor } from "@agentrt/testing";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProcessGroup, repoRoot } from "../../support/processes.ts";
import { PARTITIONS } from "../../support/system.ts";

export interface AuthSystem {
  readonly nats: NatsServer;
  readonly nc: NatsConnection;
  readonly store: JetStreamEventStore;
  readonly model: FakeModel;
  readonly processes: ProcessGroup;
  readonly gatewayUrl: string;
  /** Plaintext API keys by the names the caller gave their scopes. */
  readonly keys: Record<string, string>;
  stop(): Promise<void>;
}

export interface KeyScope {
  readonly prefix: string;
  readonly verbs: readonly ("read" | "append" | "operate" | "admin")[];
}

/** Mints a key the way an operator does (`agents keys create`), into `file`; returns the plaintext key. */
function mintKey(file: string, name: string, scope: KeyScope): string {
  const out = execFileSync(
    process.execPath,
    ["--import", "tsx", join(repoRoot, "services/web-gateway/src/cli/main.ts"), "keys", "create", "--prefix", scope.prefix, "--verbs", scope.verbs.join(","), "--name", name, "--file", file],
    { cwd: repoRoot, encoding: "utf8" },
  );
  return out.split("\n")[0]?.trim() ?? "";
}

export async function startAuthSystem(keyScopes: Record<string, KeyScope>, gatewayEnv: Record<string, string> = {}): Promise<AuthSystem> {
  const keysFile = join(mkdtempSync(join(tmpdir(), "agentrt-keys-")), "keys.json");
  const keys = Object.fromEntries(Object.entries(keyScopes).map(([name, scope]) => [name, mintKey(keysFile, name, scope)]));
  const nats = await startNatsServer();
  const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  const store = await JetStreamEventStore.open(nc, { partitionCount: PARTITIONS });
  const model = await startFakeModel({});
  const common: Record<string, string> = {
    NATS_URL: nats.url,
    OPS_PORT: "0",
    PARTITION_COUNT: String(PARTITIONS),
    NATS_STREAM_REPLICAS: "1",
    OPENAI_BASE_URL: model.url,
    OPENAI_API_KEY: "test-key",
    // Log level info: a lost connection or lease is a warn line the test looks for.
    LOG_LEVEL: "info",
  };
  const processes = new ProcessGroup();
  const port = await freeLoopbackPort();
  const started = [
    processes.add("reducer-1", "agent-reducer", { ...common, REDUCER_ID: "reducer-1", REDUCER_LEASE_TTL_MS: "4000" }, await freeLoopbackPort()),
    processes.add("driver-1", "llm-driver", common, await freeLoopbackPort()),
    processes.add(
      "gateway",
      "web-gateway",
      {
        ...common,
        HTTP_PORT: String(port),
        GRPC_PORT: "0",
        HTTP_HOST: "127.0.0.1",
        AGENTRT_DEV_MODE: "0",
        UI_BUILD_ON_START: "0",
        AGENTRT_KEYS_FILE: keysFile,
        ...gatewayEnv,
      },
      await freeLoopbackPort(),
    ),
  ];
  for (const proc of started) proc.start();
  await Promise.all(started.map((proc) => proc.waitReady(120_000)));
  const gatewayUrl = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${gatewayUrl}/v1/openapi.json`).catch(() => undefined))?.ok === true, { timeoutMs: 60_000, intervalMs: 200 });
  return {
    nats,
    nc,
    store,
    model,
    processes,
    gatewayUrl,
    keys,
    async stop() {
      await processes.stopAll();
      await store.close().catch(() => undefined);
      await nc.close().catch(() => undefined);
      await model.close();
      await nats.stop();
    },
  };
}
