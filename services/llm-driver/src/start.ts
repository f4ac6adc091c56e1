// Starts an llm-driver from its config: NATS, the JetStream event store, the work-queue stream,
// providers (or the offline model, announced loudly) and the driver. Its own process's
// composition root (main.ts) runs it, and so does an agent-reducer that drives turns in its own
// process (REDUCER_LLM_DRIVER=in-process): the same driver either way, on its own connection and
// NATS user, so it writes nothing a driver may not.

import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connectNats, countRefusedAppends, eventSigningFor, createTracing, ensureWorkStream, type Logger, type Metrics, natsConnectionOptions, startWorkClaims, tracerOption, untilNatsAnswers } from "@agentrt/service-kit";
import type { NatsConnection } from "@nats-io/nats-core";
import { openServiceStore } from "@agentrt/streams/jetstream";
import { contextWindowsFromConfig, type DriverConfig, providersFromConfig } from "./config.ts";
import { driverClaimOwner, LlmDriver } from "./driver.ts";
import { createDriverMetrics } from "./metrics.ts";

export interface StartedLlmDriver {
  readonly driver: LlmDriver;
  readonly nc: NatsConnection;
  /** Start-up phases in epoch ms (logged with "ready"). */
  readonly startup: Record<string, number>;
  /** Stops the driver (its runs finish within LLM_DRAIN_MS, or go back to the queue), its claims, store, connection and tracing. */
  stop(): Promise<void>;
}

export async function startLlmDriver(options: {
  readonly config: DriverConfig;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The NATS connection's name (`llm-driver`). */
  readonly connectionName?: string;
  readonly startup?: Record<string, number>;
  /**
   * Its stream cache follows no feed of its own: an agent-reducer in this process feeds it the
   * batches of the partitions it owns (`driver.streamFeed`), which it receives anyway.
   */
  readonly streamCacheFedByCaller?: boolean;
}): Promise<StartedLlmDriver> {
  const { config, logger, metrics } = options;
  // Before anything waits: a service whose event keys are wrong must not start half-trusting.
  const signing = eventSigningFor(config.EVENT_KEYS_DIR, "llm-driver", metrics, logger);
  const startup = options.startup ?? {};
  const providers = providersFromConfig(config);
  const contextWindows = contextWindowsFromConfig(config);
  if (Object.keys(providers).length === 0) {
    logger.warn(
      "NO MODEL PROVIDER CONFIGURED (set OPENAI_API_KEY / OPENAI_BASE_URL or LLM_PROVIDERS): every turn is answered by the built-in OFFLINE model, a deterministic stand-in labelled [offline model]",
    );
  } else {
    logger.info({ providers: Object.fromEntries(Object.entries(providers).map(([name, p]) => [name, { baseUrl: p.baseUrl, api: p.api }])) }, "model providers");
  }
  const nc = await connectNats({ ...natsConnectionOptions(config), name: options.connectionName ?? "llm-driver", logger });
  startup.natsConnected = Date.now();
  // Started while NATS elects leaders (a node restarting), each step waits for an answer.
  const waiting = { logger };
  // Claims first: when this is a driver restarted after a crash, perhaps the only one, the dead
  // incarnation's items go back to the queue while the rest starts, and the first fetch takes them.
  const claimsStarted = startWorkClaims({ nc, kind: "llm", owner: driverClaimOwner(), logger, probeEveryMs: config.LLM_CLAIM_PROBE_MS, replicas: config.NATS_STREAM_REPLICAS }).then((claims) => {
    startup.claimsWatching = Date.now();
    return claims;
  });
  const js = jetstream(nc);
  // Registered once: a start-up step may run more than once while NATS does not answer.
  const onRefused = countRefusedAppends(metrics, "llm-driver");
  const [jsm, store, claims] = await Promise.all([
    untilNatsAnswers("JetStream manager", () => jetstreamManager(nc), waiting).then(async (jsm) => {
      await untilNatsAnswers("work stream", () => ensureWorkStream(jsm, "llm", { replicas: config.NATS_STREAM_REPLICAS, logger }), waiting);
      return jsm;
    }),
    untilNatsAnswers("event store", () => openServiceStore(nc, {
      service: "llm-driver",
      partitionCount: config.PARTITION_COUNT,
      replicas: config.NATS_STREAM_REPLICAS,
      onRefused,
      signing,
    }), waiting),
    claimsStarted,
  ]);
  // The cache follows the feed from the store's current head (older batches are read on demand),
  // or is fed by the reducer in this process.
  const head =
    config.LLM_STREAM_CACHE !== "on"
      ? undefined
      : options.streamCacheFedByCaller === true
        ? ("fed by caller" as const)
        : (await untilNatsAnswers("event store head", () => jsm.streams.info(store.streamName), waiting)).state.last_seq;
  startup.storeOpened = Date.now();
  const tracing = await createTracing("llm-driver");
  const driver = new LlmDriver({
    ...tracerOption(tracing),
    nc,
    js,
    jsm,
    store,
    providers,
    logger,
    metrics: createDriverMetrics(metrics),
    settings: { idleTimeoutMs: config.LLM_IDLE_TIMEOUT_MS, contextWindows },
    ...(head === undefined ? {} : {
          streamCache: {
            afterSequence: head,
            maxStreams: config.LLM_STREAM_CACHE_MAX_STREAMS,
            maxBytes: config.LLM_STREAM_CACHE_MAX_BYTES,
            idleMs: config.LLM_STREAM_CACHE_IDLE_MS,
          },
        }),
    work: { ackWaitMs: config.LLM_WORK_ACK_WAIT_MS, heartbeatMs: config.LLM_WORK_HEARTBEAT_MS, concurrency: config.LLM_CONCURRENCY, drainMs: config.LLM_DRAIN_MS, tenantDepth: config.AGENT_TENANT_DEPTH, ...(config.LLM_SPARE_SLOTS === undefined ? {} : { spareSlots: config.LLM_SPARE_SLOTS }) },
    startedClaims: claims,
  });
  await driver.start();
  startup.workStarted = Date.now();
  return {
    driver,
    nc,
    startup,
    async stop() {
      await driver.stop();
      await claims.stop();
      await store.close();
      await nc.drain();
      await tracing.shutdown();
    },
  };
}
