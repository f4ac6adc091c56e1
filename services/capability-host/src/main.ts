// Composition root of the capability host: config, logger, metrics, NATS, the JetStream event
// store, the host (checker, sandbox, itx, provider registry) and its work consumer, the ops
// endpoint. SIGTERM stops claiming scripts, lets running ones finish, and drains NATS.

import { configuredStreamQuota, connectNats, countRefusedAppends, eventSigningFor, createLogger, createMetrics, createTracing, tracerOption, loadConfig, natsConnectionOptions, runService, startOpsServer, stopInOrder, trackReadiness, untilNatsAnswers } from "@agentrt/service-kit";
import { openServiceStore } from "@agentrt/streams/jetstream";
import { jetstreamManager } from "@nats-io/jetstream";
import { readFileSync } from "node:fs";
import { CapabilityHost } from "./capability-host.ts";
import { hostConfigSchema } from "./config.ts";

const config = loadConfig(hostConfigSchema);
const logger = createLogger("capability-host", config.LOG_LEVEL);

// Not awaited at the top level: the bundle is CommonJS (scripts/bundling.ts), and runService settles its own errors.
void runService({
  name: "capability-host",
  logger,
  stopTimeoutMs: config.SCRIPT_MAX_RUN_MS + 5_000,
  async start() {
    const metrics = createMetrics("capability-host");
    // Before anything waits: a service whose event keys are wrong must not start half-trusting.
    const signing = eventSigningFor(config.EVENT_KEYS_DIR, "capability-host", metrics, logger);
    // Alive (and /readyz "starting") while it waits for NATS, however long that takes.
    const ops = await startOpsServer({ host: config.OPS_HOST, port: config.OPS_PORT, metrics });
    const phases = metrics.histogram("capability_host_phase_seconds", "Script phase durations", ["phase"]);
    const outcomes = metrics.counter("capability_host_scripts_total", "Scripts handled, by outcome", ["outcome"]);
    const replacedCheckers = metrics.counter("capability_host_typecheck_workers_replaced_total", "Typecheck worker threads replaced, by reason", ["reason"]);
    const replacedWorkers = metrics.counter("capability_host_sandbox_workers_replaced_total", "Sandbox worker threads replaced, by reason", ["reason"]);
    const nc = await connectNats({ ...natsConnectionOptions(config), name: "capability-host", logger });
    // Started while NATS elects leaders (a node restarting), the store waits for an answer.
    // Registered once: a start-up step may run more than once while NATS does not answer.
    const onRefused = countRefusedAppends(metrics, "capability-host");
    const store = await untilNatsAnswers("event store", () => openServiceStore(nc, {
      service: "capability-host",
      partitionCount: config.PARTITION_COUNT,
      replicas: config.NATS_STREAM_REPLICAS,
      onRefused,
      signing,
    }), { logger });
    // The stream cache follows the feed from the store's current head: older batches are read on demand.
    const head =
      config.SCRIPT_STREAM_CACHE === "on"
        ? (await untilNatsAnswers("event store head", async () => (await (await jetstreamManager(nc)).streams.info(store.streamName)).state.last_seq, { logger }))
        : undefined;
    const tracing = await createTracing("capability-host");
    const host = await CapabilityHost.start({
      ...tracerOption(tracing),
      nc,
      store,
      logger,
      limits: { typecheckBudgetMs: config.SCRIPT_TYPECHECK_BUDGET_MS, maxRunMs: config.SCRIPT_MAX_RUN_MS, maxSourceBytes: config.SCRIPT_MAX_SOURCE_BYTES },
      sandboxLimits: { memoryBytes: config.SCRIPT_MEMORY_LIMIT_MB * 1024 * 1024, stackBytes: config.SCRIPT_STACK_LIMIT_KB * 1024, maxSyncSliceMs: config.SCRIPT_MAX_SYNC_SLICE_MS },
      concurrency: config.SCRIPT_CONCURRENCY,
      replicas: config.NATS_STREAM_REPLICAS,
      perAgentConcurrency: config.SCRIPT_CONCURRENCY_PER_AGENT,
      ...(config.SCRIPT_CONCURRENCY_PER_TENANT === undefined ? {} : { perTenantConcurrency: config.SCRIPT_CONCURRENCY_PER_TENANT }),
      typecheckWorkers: config.SCRIPT_TYPECHECK_WORKERS,
      livenessTtlMs: config.HOST_LIVENESS_TTL_MS,
      ackWaitMs: config.SCRIPT_WORK_ACK_WAIT_MS,
      claimProbeMs: config.SCRIPT_CLAIM_PROBE_MS,
      providerCallTimeoutMs: config.PROVIDER_CALL_TIMEOUT_MS,
      fileQuota: { bytes: config.AGENT_FILES_QUOTA_BYTES, entries: config.AGENT_FILES_QUOTA_FILES },
      kvQuota: { bytes: config.AGENT_KV_QUOTA_BYTES, entries: config.AGENT_KV_QUOTA_KEYS },
      streamQuota: configuredStreamQuota(config, store, logger),
      ...(head === undefined
        ? {}
        : {
            streamCache: {
              afterSequence: head,
              maxStreams: config.SCRIPT_STREAM_CACHE_MAX_STREAMS,
              maxBytes: config.SCRIPT_STREAM_CACHE_MAX_BYTES,
              idleMs: config.SCRIPT_STREAM_CACHE_IDLE_MS,
            },
          }),
      onTiming: (phase, ms) => phases.observe({ phase }, ms / 1000),
      onOutcome: (outcome) => outcomes.inc({ outcome }),
      onSandboxWorkerReplaced: (reason) => replacedWorkers.inc({ reason }),
      onCheckerReplaced: (reason) => replacedCheckers.inc({ reason }),
      ...(config.PROJECT_PROMPT_FILE === undefined
        ? {}
        : {
            project: {
              promptFileText: readFileSync(config.PROJECT_PROMPT_FILE, "utf8"),
              project: { name: config.PROJECT_NAME, slug: config.PROJECT_SLUG },
              configRepo: config.PROJECT_CONFIG_REPO,
            },
          }),
    });
    await host.consume();
    const readiness = trackReadiness(nc, { "script consumer running": () => host.consuming() });
    ops.ready(readiness.unmet);
    logger.info({ opsPort: ops.port }, "capability-host ready");
    return stopInOrder(readiness, () => host.stop(), () => ops.close(), () => store.close(), () => nc.drain(), () => tracing.shutdown());
  },
});
