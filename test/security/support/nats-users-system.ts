// A whole agentrt system whose NATS has the generated per-service users: nats-server started
// with `renderNatsAuthorization` (random passwords), every service as its own process
// connecting as its own user, the repo provider as its own provider user (`provider-repo`, bound
// to itx.repo) beside another provider's (`provider-other`, bound to itx.other), and an unrestricted `test` user for the test's
// own store connection. Every service signs its records with its own event key and reads only
// records signed so (EVENT_KEYS_DIR); the test's store signs as the gateway, whose types
// (user input, birth) are all it appends. Used to prove the permission lists complete (a whole
// turn works) and tight (a service's user is refused what it does not need).

import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import type { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { NATS_SERVICE_USERS, loadEventSigning, natsInboxPrefix, type ProviderUser, renderNatsAuthorization, type NatsServiceUser, writeEventKeys } from "@agentrt/service-kit";
import type { FakeModel, FakeModelOptions, NatsServer } from "@agentrt/testing";
import type { ProcessGroup } from "../../support/processes.ts";
import { startSystem } from "../../support/system.ts";

export interface NatsUsersSystem {
  readonly nats: NatsServer;
  readonly passwords: Readonly<Record<NatsServiceUser | ProviderUserName, string>>;
  /** The test's own, unrestricted connection and store. */
  readonly nc: NatsConnection;
  readonly store: JetStreamEventStore;
  readonly model: FakeModel;
  readonly processes: ProcessGroup;
  readonly gatewayUrl: string;
  /** The services' event keys (EVENT_KEYS_DIR). */
  readonly eventKeysDir: string;
  /** Connects as one service's or provider's user. */
  connectAs(user: NatsServiceUser | ProviderUserName): Promise<NatsConnection>;
  /** nats-server log lines reporting a permissions violation. */
  violations(): string[];
  stop(): Promise<void>;
}

export const TEST_USER = { user: "test", password: randomBytes(12).toString("hex") };

/** Providers with their own users: the repo provider's, and another's it must not reach. */
export const PROVIDER_USERS = [
  { user: "provider-repo", namespaces: ["repo"] },
  { user: "provider-other", namespaces: ["other"] },
] as const satisfies readonly ProviderUser[];
type ProviderUserName = (typeof PROVIDER_USERS)[number]["user"];

export async function startNatsUsersSystem(
  options: {
    model?: FakeModelOptions;
    env?: Record<string, string>;
    /** Overrides of the gateway's env (e.g. auth on). */
    gatewayEnv?: Record<string, string>;
    /** No llm-driver process: the reducer runs its driver (REDUCER_LLM_DRIVER=in-process), connecting as the driver's user. */
    inProcessDriver?: boolean;
  } = {},
): Promise<NatsUsersSystem> {
  const passwords = Object.fromEntries([...NATS_SERVICE_USERS, ...PROVIDER_USERS.map((p) => p.user)].map((u) => [u, randomBytes(18).toString("base64url")])) as Record<
    NatsServiceUser | ProviderUserName,
    string
  >;
  // The whole server log goes to a file: the harness keeps only its last lines, and a violation
  // early in the run must still be found.
  const logFile = join(mkdtempSync(join(tmpdir(), "agentrt-nats-log-")), "nats-server.log");
  const as = (user: NatsServiceUser | ProviderUserName) => ({ NATS_USER: user, NATS_PASSWORD: passwords[user] });
  const eventKeysDir = join(mkdtempSync(join(tmpdir(), "agentrt-event-keys-")), "keys");
  writeEventKeys(eventKeysDir);
  const system = await startSystem({
    hosts: 1,
    gateway: true,
    repoProvider: { openPulls: 3 },
    natsExtraConfig: `log_file: ${JSON.stringify(logFile)}\n${renderNatsAuthorization({
      passwords,
      providers: PROVIDER_USERS.map((p) => ({ ...p, password: passwords[p.user] })),
      unrestricted: [TEST_USER],
    })}`,
    testUser: TEST_USER,
    storeSigning: loadEventSigning(eventKeysDir, "web-gateway"),
    envFor: (service) => ({
      ...as(service === "repo-provider" ? "provider-repo" : service),
      ...(service === "agent-reducer" && options.inProcessDriver === true
        ? { REDUCER_LLM_DRIVER: "in-process", LLM_DRIVER_NATS_USER: "llm-driver", LLM_DRIVER_NATS_PASSWORD: passwords["llm-driver"] }
        : {}),
    }),
    ...(options.inProcessDriver === true ? { drivers: 0 } : {}),
    // Snapshots every few events, so the reducer's object-store grant is exercised too.
    env: { REDUCER_SNAPSHOT_EVERY_EVENTS: "5", EVENT_KEYS_DIR: eventKeysDir, ...options.env },
    ...(options.model === undefined ? {} : { model: options.model }),
    ...(options.gatewayEnv === undefined ? {} : { gatewayEnv: options.gatewayEnv }),
  });
  const { nats, gatewayUrl } = system;
  if (nats === undefined || gatewayUrl === undefined) throw new Error("the system started without its own nats-server or gateway");
  return {
    ...system,
    nats,
    gatewayUrl,
    passwords,
    eventKeysDir,
    connectAs: (user) => connect({ servers: nats.url, user, pass: passwords[user], inboxPrefix: natsInboxPrefix(user), maxReconnectAttempts: 0 }),
    violations: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "").split("\n").filter((line) => /violation/i.test(line)),
    stop: async () => {
      await system.stop();
      for (const dir of [dirname(logFile), dirname(eventKeysDir)]) rmSync(dir, { recursive: true, force: true });
    },
  };
}
