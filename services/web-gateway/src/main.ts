// Composition root of the web-gateway: config, logger, NATS, the JetStream event store, auth,
// then the HTTP server (API, SSE, WebSocket, UI), the gRPC server and the ops endpoint.
// SIGTERM first turns /readyz to 503 and keeps serving for SHUTDOWN_DELAY_MS (endpoint
// propagation), then closes the listeners (live SSE/WebSocket clients reconnect elsewhere and
// resume from their last offset), then drains NATS.

import { JetStreamEventStore, type LiveEventsDropped, openServiceStore } from "@agentrt/streams/jetstream";
import { configuredStreamQuota, connectNats, countRefusedAppends, eventSigningFor, createLogger, createMetrics, createTracing, tracerOption, DEFAULT_STOP_TIMEOUT_MS, loadConfig, natsConnectionOptions, runService, startOpsServer, trackReadiness, untilNatsAnswers } from "@agentrt/service-kit";
import { setTimeout as sleep } from "node:timers/promises";
import { assertDevModeBindable, Authenticator } from "./auth/authenticator.ts";
import { applyKeys, followKeysFile, loadKeys } from "./auth/load-keys.ts";
import { gatewayConfigSchema } from "./config.ts";
import { gatewayCore } from "./core.ts";
import { createHttpGateway } from "./gateway.ts";
import { gatewayMetrics } from "./http/gateway-metrics.ts";
import { LOG_REDACT_PATHS } from "./http/redact.ts";
import { bindGrpc, createGrpcServer, shutdownGrpc } from "./grpc/server.ts";
import { DEFAULT_UI_DIST, ensureUiBuilt } from "./ui-build.ts";

const config = loadConfig(gatewayConfigSchema);
// Keys must never reach a log line: header-shaped fields are censored on every line.
const logger = createLogger("web-gateway", config.LOG_LEVEL).child({}, { redact: { paths: LOG_REDACT_PATHS, censor: "[REDACTED]" } });

// Not awaited at the top level: the bundle is CommonJS (scripts/bundling.ts), and runService settles its own errors.
void runService({
  name: "web-gateway",
  logger,
  stopTimeoutMs: config.SHUTDOWN_DELAY_MS + DEFAULT_STOP_TIMEOUT_MS,
  async start() {
    const devMode = config.AGENTRT_DEV_MODE === "1";
    if (devMode) {
      assertDevModeBindable(config.HTTP_HOST);
      logger.warn(
        { host: config.HTTP_HOST },
        "!!! AGENTRT_DEV_MODE=1: the gateway is OPEN — no API key is required. Loopback only; never use this in production. !!!",
      );
    }
    const loaded = loadKeys({ file: config.AGENTRT_KEYS_FILE, json: config.AGENTRT_KEYS_JSON });
    if (!devMode && loaded.keys.length === 0) {
      logger.warn("no API keys configured (AGENTRT_KEYS_FILE / AGENTRT_KEYS_JSON): every request will be refused with 401");
    }
    const metrics = createMetrics("web-gateway");
    // Before anything waits: a service whose event keys are wrong must not start half-trusting.
    const signing = eventSigningFor(config.EVENT_KEYS_DIR, "web-gateway", metrics, logger);
    // Alive (and /readyz "starting") while it waits for NATS, however long that takes.
    const ops = await startOpsServer({ host: config.OPS_HOST, port: config.OPS_PORT, metrics });
    const nc = await connectNats({ ...natsConnectionOptions(config), name: "web-gateway", logger });
    const storeOptions = {
      partitionCount: config.PARTITION_COUNT,
      replicas: config.NATS_STREAM_REPLICAS,
      maxEventBytes: config.MAX_EVENT_BYTES,
      signing,
      // Once per live subscription: live events following offsets the stream has not reached, or more than it holds back.
      onLiveEventsDropped: (dropped: LiveEventsDropped) => logger.warn(dropped, "dropped live events a live subscription could not hold"),
    };
    // Started while NATS elects leaders (a node restarting), each store waits for an answer.
    // Registered once: a start-up step may run more than once while NATS does not answer.
    const onRefused = countRefusedAppends(metrics, "web-gateway");
    const store = await untilNatsAnswers("event store", () => openServiceStore(nc, { ...storeOptions, service: "web-gateway", onRefused }), { logger });
    // Reads get their own connection: a flood of big pages cannot back up appends and live
    // subscriptions on one socket, nor get them dropped with it as a slow consumer.
    const readNc = await connectNats({ ...natsConnectionOptions(config), name: "web-gateway-reads", logger });
    const readStore = await untilNatsAnswers("read store", () => JetStreamEventStore.open(readNc, storeOptions), { logger });
    // Counts each stream's usage through the read connection; the ledger is shared with every gateway and host.
    const quota = configuredStreamQuota(config, readStore, logger);
    const auth = new Authenticator({
      keys: loaded.keys,
      devMode,
      defaultRateLimit: { perSecond: config.RATE_LIMIT_PER_SECOND, burst: config.RATE_LIMIT_BURST },
      nowMs: Date.now,
    });
    const uiDistDir = config.UI_DIST_DIR ?? DEFAULT_UI_DIST;
    if (config.UI_BUILD_ON_START === "1") await ensureUiBuilt(uiDistDir, logger);
    const tracing = await createTracing("web-gateway");
    const gwMetrics = gatewayMetrics(metrics);
    const gateway = createHttpGateway({
      ...tracerOption(tracing),
      store,
      readStore,
      quota,
      limits: {
        maxEventBytes: config.MAX_EVENT_BYTES,
        maxPageBytes: config.MAX_READ_PAGE_BYTES,
        maxListFoldBytes: config.MAX_LIST_FOLD_BYTES,
        maxConcurrentReadsPerKey: config.READS_PER_KEY,
        maxConcurrentReads: config.READS_TOTAL,
        maxCachedStateBytes: config.STATE_CACHE_BYTES,
      },
      core: gatewayCore(),
      auth,
      log: logger,
      uiDistDir,
      maxBodyBytes: config.MAX_BODY_BYTES,
      metrics: gwMetrics,
      maxJsonDepth: config.MAX_JSON_DEPTH,
      maxLiveSubscriptionsPerKey: config.MAX_LIVE_SUBSCRIPTIONS_PER_KEY,
      maxConnections: config.MAX_CONNECTIONS,
      timeouts: { headersTimeoutMs: config.HEADERS_TIMEOUT_MS, requestTimeoutMs: config.REQUEST_TIMEOUT_MS, keepAliveTimeoutMs: config.KEEP_ALIVE_TIMEOUT_MS },
    });
    // A key revoked or changed in the file stops working, and the live streams it opened end.
    const keysFile = config.AGENTRT_KEYS_FILE;
    const onKeys = applyKeys(auth, gateway.liveLimiter, logger);
    const stopFollowingKeys =
      keysFile === undefined || loaded.fileText === undefined || config.AGENTRT_KEYS_RELOAD_MS === 0
        ? () => {}
        : followKeysFile({ file: keysFile, json: config.AGENTRT_KEYS_JSON }, { since: loaded.fileText, everyMs: config.AGENTRT_KEYS_RELOAD_MS, onKeys, log: logger });
    const httpPort = await gateway.listen(config.HTTP_PORT, config.HTTP_HOST);
    const grpc = createGrpcServer(gateway.api, auth, logger, {
      liveLimiter: gateway.liveLimiter,
      maxJsonDepth: config.MAX_JSON_DEPTH,
      maxRequestBytes: config.MAX_BODY_BYTES,
      requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
    });
    const grpcListener = await bindGrpc(grpc, config.HTTP_HOST, config.GRPC_PORT, {
      log: logger,
      maxConnections: config.MAX_CONNECTIONS,
      firstByteMs: config.HEADERS_TIMEOUT_MS,
      metrics: gwMetrics,
    });
    const grpcPort = grpcListener.port;
    // Ready while both connections (appends and live, and reads) are up and the gateway is not stopping.
    const readiness = trackReadiness(nc, { "read connection open": () => !readNc.isClosed() });
    ops.ready(readiness.unmet);
    logger.info({ http: `http://${config.HTTP_HOST}:${httpPort}`, grpcPort, opsPort: ops.port }, "web-gateway listening");
    return {
      async stop() {
        readiness.markStopping();
        stopFollowingKeys();
        if (config.SHUTDOWN_DELAY_MS > 0) {
          logger.info({ delayMs: config.SHUTDOWN_DELAY_MS }, "not ready; serving until endpoints drop this pod");
          await sleep(config.SHUTDOWN_DELAY_MS);
        }
        await gateway.close();
        const grpcClosed = grpcListener.close();
        await shutdownGrpc(grpc);
        await grpcClosed;
        await ops.close();
        await readStore.close();
        await store.close();
        await readNc.drain();
        await nc.drain();
        await tracing.shutdown();
      },
    };
  },
});
