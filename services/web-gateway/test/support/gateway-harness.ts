// Starts a real gateway (HTTP + gRPC) on free loopback ports over a given event store, with
// real API keys, for integration tests.
import { afterAll, beforeAll } from "vitest";
import { openTestStore, type TestStore } from "./store.ts";
import type { EventStore } from "@agentrt/streams";
import { testLogger } from "@agentrt/testing";
import { Authenticator } from "../../src/auth/authenticator.ts";
import { mintApiKey, type Scope, type StoredKey } from "../../src/auth/keys.ts";
import { createHttpGateway, type HttpGateway } from "../../src/gateway.ts";
import { bindGrpc, createGrpcServer, type GrpcListener, type GrpcOptions } from "../../src/grpc/server.ts";
import { gatewayCore } from "../../src/core.ts";
import type { Server } from "@grpc/grpc-js";
import type { ReadLimits } from "../../src/api/read-limits.ts";
import type { LiveTimings } from "../../src/http/live.ts";

export interface TestGateway {
  readonly url: string;
  readonly auth: Authenticator;
  readonly grpcAddress: string;
  /** The gRPC server, when started (`grpc: true`). */
  readonly grpcServer: Server | undefined;
  readonly gateway: HttpGateway;
  close(): Promise<void>;
}

export interface TestKey {
  readonly apiKey: string;
  readonly stored: StoredKey;
}

export function testKey(scopes: Scope[], rateLimit?: StoredKey["rateLimit"]): TestKey {
  const { apiKey, stored } = mintApiKey(scopes);
  return { apiKey, stored: rateLimit === undefined ? stored : { ...stored, rateLimit } };
}

export async function startTestGateway(options: {
  store: EventStore;
  keys?: TestKey[];
  devMode?: boolean;
  uiDistDir?: string;
  maxBodyBytes?: number;
  /** Connections each listener holds at once. */
  maxConnections?: number;
  /** How long a new gRPC connection may send nothing. */
  grpcFirstByteMs?: number;
  grpc?: boolean;
  grpcOptions?: GrpcOptions;
  /** The API's read limits (a listing page's fold budget, …). */
  limits?: Partial<ReadLimits>;
  maxLiveSubscriptionsPerKey?: number;
  liveTimings?: LiveTimings;
}): Promise<TestGateway> {
  const log = testLogger("web-gateway-test");
  const auth = new Authenticator({
    keys: (options.keys ?? []).map((k) => k.stored),
    devMode: options.devMode ?? false,
    defaultRateLimit: { perSecond: 1000, burst: 1000 },
    nowMs: Date.now,
  });
  const gateway = createHttpGateway({
    store: options.store,
    core: gatewayCore(),
    auth,
    log,
    ...(options.uiDistDir === undefined ? {} : { uiDistDir: options.uiDistDir }),
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
    ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(options.maxLiveSubscriptionsPerKey === undefined ? {} : { maxLiveSubscriptionsPerKey: options.maxLiveSubscriptionsPerKey }),
    ...(options.liveTimings === undefined ? {} : { liveTimings: options.liveTimings }),
  });
  const port = await gateway.listen(0, "127.0.0.1");
  let grpcServer: Server | undefined;
  let grpcAddress = "";
  let grpcListener: GrpcListener | undefined;
  if (options.grpc === true) {
    grpcServer = createGrpcServer(gateway.api, auth, log, { liveLimiter: gateway.liveLimiter, ...options.grpcOptions });
    grpcListener = await bindGrpc(grpcServer, "127.0.0.1", 0, {
      log,
      ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections }),
      ...(options.grpcFirstByteMs === undefined ? {} : { firstByteMs: options.grpcFirstByteMs }),
    });
    grpcAddress = `127.0.0.1:${grpcListener.port}`;
  }
  return {
    url: `http://127.0.0.1:${port}`,
    auth,
    grpcAddress,
    grpcServer,
    gateway,
    close: async () => {
      grpcServer?.forceShutdown();
      await grpcListener?.close();
      await gateway.close();
    },
  };
}

/**
 * A dev-mode gateway on its own test store for the whole file: opened before the first test,
 * closed after the last (closing tolerates a NATS the test itself took down).
 */
export function useDevGateway(): { ts: TestStore; gw: TestGateway } {
  const fixture = {} as { ts: TestStore; gw: TestGateway };
  beforeAll(async () => {
    fixture.ts = await openTestStore();
    fixture.gw = await startTestGateway({ store: fixture.ts.store, devMode: true });
  });
  afterAll(async () => {
    await fixture.gw?.close();
    await fixture.ts?.close().catch(() => undefined);
  });
  return fixture;
}
