// A system for security tests: test/support/system.ts's reducer, driver and gateway as real
// processes, the gateway with auth ON and the API keys the test mints.

import type { JetStreamEventStore } from "@agentrt/streams/jetstream";
import type { FakeModel, NatsServer } from "@agentrt/testing";
import type { NatsConnection } from "@nats-io/nats-core";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { type ProcessGroup, repoRoot } from "../../support/processes.ts";
import { startSystem } from "../../support/system.ts";
import { scratchDir } from "@agentrt/testing";

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
  const keysFile = join(scratchDir("agentrt-keys-"), "keys.json");
  const keys = Object.fromEntries(Object.entries(keyScopes).map(([name, scope]) => [name, mintKey(keysFile, name, scope)]));
  const system = await startSystem({
    gateway: true,
    // Log level info: a lost connection or lease is a warn line the test looks for.
    env: { LOG_LEVEL: "info" },
    gatewayEnv: { AGENTRT_DEV_MODE: "0", UI_BUILD_ON_START: "0", AGENTRT_KEYS_FILE: keysFile, ...gatewayEnv },
  });
  const { nats, gatewayUrl } = system;
  if (nats === undefined || gatewayUrl === undefined) throw new Error("the system started without its own nats-server or gateway");
  return { ...system, nats, gatewayUrl, keys, stop: () => system.stop() };
}
