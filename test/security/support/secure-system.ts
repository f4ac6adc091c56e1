// The whole system as real processes with auth ON, for the security suite: a harness
// nats-server, the fake model, reducer, driver, capability host and gateway, with API keys
// minted by the real CLI (`agents keys create`) into a keys file. The processes are
// test/support's, keeping every byte each service writes (at debug level) so a test can scan
// all of it.

import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { type FakeModel, freeLoopbackPort, type NatsServer, startFakeModel, startNatsServer, scratchDir } from "@agentrt/testing";
import { ProcessGroup, repoRoot, type ServiceName, type ServiceProcess } from "../../support/processes.ts";
import { lastUserContent } from "../../support/turns.ts";

export interface MintedKey {
  readonly apiKey: string;
  readonly id: string;
  readonly secret: string;
}

/** Mints keys with the real CLI (in parallel, one scratch file each), then writes them all to `file`. */
export async function mintKeys(file: string, scopes: ReadonlyArray<{ prefix: string; verbs: string }>): Promise<MintedKey[]> {
  const minted = await Promise.all(
    scopes.map(async (scope, i) => {
      const scratch = `${file}.${i}`;
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ["--import", "tsx", join(repoRoot, "services/web-gateway/src/cli/main.ts"), "keys", "create", "--prefix", scope.prefix, "--verbs", scope.verbs, "--file", scratch],
        { cwd: repoRoot },
      );
      const match = /^(agrt_([A-Za-z0-9]+)_([A-Za-z0-9_-]+))$/m.exec(stdout);
      if (match === null) throw new Error(`keys create printed no key:\n${stdout}`);
      const stored = (JSON.parse(readFileSync(scratch, "utf8")) as { keys: unknown[] }).keys;
      return { key: { apiKey: match[1]!, id: match[2]!, secret: match[3]! }, stored };
    }),
  );
  writeFileSync(file, JSON.stringify({ keys: minted.flatMap((m) => m.stored) }), { mode: 0o600 });
  return minted.map((m) => m.key);
}

export interface SecureSystem {
  readonly gatewayUrl: string;
  readonly grpcPort: number;
  readonly model: FakeModel;
  readonly processes: readonly ServiceProcess[];
  readonly gateway: ServiceProcess;
  stop(): Promise<void>;
}

export interface SecureSystemOptions {
  /** Extra gateway env (limits, timeouts). */
  readonly gatewayEnv?: Record<string, string>;
  /** Only NATS and the gateway (tests of the gateway's own limits). */
  readonly gatewayOnly?: boolean;
}

/** Starts NATS, the model and the services with `keysFile` as the gateway's keys. */
export async function startSecureSystem(keysFile: string, options: SecureSystemOptions = {}): Promise<SecureSystem> {
  const nats: NatsServer = await startNatsServer();
  const model = await startFakeModel({ defaultReply: (r) => ({ text: `answer to ${lastUserContent(r.body)}` }) });
  const common = { NATS_URL: nats.url, PARTITION_COUNT: "4", OPENAI_BASE_URL: model.url, OPENAI_API_KEY: "test-key", REDUCER_LEASE_TTL_MS: "4000" };
  // A tiny built UI, so static paths reach real files, the fallback and the asset cache rule.
  const uiDir = scratchDir("agentrt-ui-");
  mkdirSync(join(uiDir, "assets"));
  writeFileSync(join(uiDir, "index.html"), "<!doctype html><title>agentrt</title>");
  writeFileSync(join(uiDir, "assets", "app.js"), "export {};");
  const httpPort = await freeLoopbackPort();
  const grpcPort = await freeLoopbackPort();
  const group = new ProcessGroup();
  const add = async (name: string, service: ServiceName, env: Record<string, string>) =>
    group.add(name, service, env, await freeLoopbackPort(), undefined, { keepAllOutput: true, logLevel: "debug" }).start();
  if (options.gatewayOnly !== true) {
    await add("reducer", "agent-reducer", { ...common, REDUCER_ID: "reducer-1" });
    await add("driver", "llm-driver", common);
    await add("host", "capability-host", common);
  }
  const gateway = await add(
    "gateway",
    "web-gateway",
    {
      ...common,
      HTTP_HOST: "127.0.0.1",
      HTTP_PORT: String(httpPort),
      GRPC_PORT: String(grpcPort),
      AGENTRT_DEV_MODE: "0",
      AGENTRT_KEYS_FILE: keysFile,
      UI_DIST_DIR: uiDir,
      UI_BUILD_ON_START: "0",
      ...options.gatewayEnv,
    },
  );
  const processes = group.all;
  const stop = async () => {
    await group.stopAll();
    await model.close();
    await nats.stop();
  };
  try {
    await Promise.all(processes.map((p) => p.waitReady(120_000)));
  } catch (error) {
    await stop();
    throw error;
  }
  return { gatewayUrl: `http://127.0.0.1:${httpPort}`, grpcPort, model, processes, gateway, stop };
}

/** A temp keys file path (the CLI creates it). */
export function tempKeysFile(): string {
  return join(scratchDir("agentrt-keys-"), "keys.json");
}
