// Composition root of the llm-driver: config, logger, NATS, the JetStream event store, the
// work-queue stream, providers (or the offline model, announced loudly), the driver and the
// ops endpoint. SIGTERM stops claiming work, hands running requests back, and drains.

import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connectNats, countRefusedAppends, createLogger, createMetrics, createTracing, ensureWorkStream, loadConfig, natsConnectionOptions, runService, startOpsServer, stopInOrder, trackReadiness, untilNatsAnswers } from "@agentrt/service-kit";
import { openServiceStore } from "@agentrt/streams/jetstream";
import { contextWindowsFromConfig, driverConfigSchema, providersFromConfig } from "./config.ts";
import { LlmDriver } from "./driver.ts";
import { createDriverMetrics } from "./metrics.ts";

const config = loadConfig(driverConfigSchema);
const logger = createLogger("llm-driver", config.LOG_LEVEL);

await runService({
  name: "llm-driver",
  logger,
  async start() {
    const providers = providersFromConfig(config);
    const contextWindows = contextWindowsFromConfig(config);
    if (Object.keys(providers).length === 0) {
      logger.warn(
        "NO MODEL PROVIDER CONFIGURED (set OPENAI_API_KEY / OPENAI_BASE_URL or LLM_PROVIDERS): every turn is answered by the built-in OFFLINE model, a deterministic stand-in labelled [offline model]",
      );
    } else {
      logger.info({ providers: Object.fromEntries(Object.entries(providers).map(([name, p]) => [name, { baseUrl: p.baseUrl, api: p.api }])) }, "model providers");
    }
    const metrics = createMetrics("llm-driver");
    const nc = await connectNats({ ...natsConnectionOptions(config), name: "llm-driver", logger });
    const js = jetstream(nc);
    // Started while NATS elects leaders (a node restarting), each step waits for an answer.
    const waiting = { logger };
    const jsm = await untilNatsAnswers("JetStream manager", () => jetstreamManager(nc), waiting);
    await untilNatsAnswers("work stream", () => ensureWorkStream(jsm, { replicas: config.NATS_STREAM_REPLICAS }), waiting);
    const store = await untilNatsAnswers("event store", () => openServiceStore(nc, {
      service: "llm-driver",
      partitionCount: config.PARTITION_COUNT,
      replicas: config.NATS_STREAM_REPLICAS,
      onRefused: countRefusedAppends(metrics, "llm-driver"),
    }), waiting);
    // The cache follows the feed from the store's current head: older batches are read on demand.
    const head = config.LLM_STREAM_CACHE === "on" ? (await untilNatsAnswers("event store head", () => jsm.streams.info(store.streamName), waiting)).state.last_seq : undefined;
    const tracing = createTracing("llm-driver");
    const driver = new LlmDriver({
      // Spans nobody exports are CPU on every turn for nothing (a span, two hashes, a context).
      ...(tracing.exporting ? { tracer: tracing.tracer } : {}),
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
      work: { ackWaitMs: config.LLM_WORK_ACK_WAIT_MS, heartbeatMs: config.LLM_WORK_HEARTBEAT_MS, concurrency: config.LLM_CONCURRENCY },
      claims: { probeEveryMs: config.LLM_CLAIM_PROBE_MS, replicas: config.NATS_STREAM_REPLICAS },
    });
    await driver.start();
    const readiness = trackReadiness(nc, [() => driver.consuming()]);
    const ops = await startOpsServer({ host: config.OPS_HOST, port: config.OPS_PORT, metrics, ready: readiness.ready });
    logger.info({ opsPort: ops.port, offline: driver.offline }, "llm-driver ready");
    return stopInOrder(readiness, () => driver.stop(), () => ops.close(), () => store.close(), () => nc.drain(), () => tracing.shutdown());
  },
});
