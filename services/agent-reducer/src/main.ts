// Composition root of the agent-reducer: config, logger, NATS, the JetStream event store,
// snapshots, the work-queue stream, then the reducer itself; SIGTERM snapshots, releases the
// leases and drains.

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { jetstreamManager } from "@nats-io/jetstream";
import { DEFAULT_PUBLISH_TIMEOUT_MS, JetStreamPublisher, openServiceStore } from "@agentrt/streams/jetstream";
import { reactionPolicy } from "@agentrt/agent-core";
import { connectNats, countRefusedAppends, eventSigningFor, createLogger, createMetrics, createTracing, tracerOption, DEFAULT_STOP_TIMEOUT_MS, ensureWorkStreams, natsConnectionOptions, runService, startOpsServer, stopInOrder, trackReadiness, untilNatsAnswers } from "@agentrt/service-kit";
import { startLlmDriver, type StartedLlmDriver } from "@agentrt/llm-driver";
import { inProcessDriverConfig, loadReducerConfig } from "./config.ts";
import { natsReducerEffects } from "./effects.ts";
import { ReducerService } from "./reducer-service.ts";
import { openSnapshotStore } from "./snapshots.ts";

// Start-up phases in epoch ms, logged with "ready": a restarted reducer is how a killed one's
// agents resume when it was the only one (with its driver in-process, their turns too).
const startup: Record<string, number> = { processStarted: Math.round(performance.timeOrigin), modulesLoaded: Date.now() };
const config = loadReducerConfig();
const logger = createLogger("agent-reducer", config.LOG_LEVEL);
// The in-process driver reads the driver's variables, connecting as its own NATS user.
const driverConfig = inProcessDriverConfig(config);

// Not awaited at the top level: the bundle is CommonJS (scripts/bundling.ts), and runService settles its own errors.
void runService({
  name: "agent-reducer",
  logger,
  // Its driver, when in this process, drains first (LLM_DRAIN_MS), then the reducer stops as usual.
  stopTimeoutMs: (driverConfig?.LLM_DRAIN_MS ?? 0) + DEFAULT_STOP_TIMEOUT_MS,
  async start() {
    const metrics = createMetrics("agent-reducer");
    // Before anything waits: a service whose event keys are wrong must not start half-trusting.
    const signing = eventSigningFor(config.EVENT_KEYS_DIR, "agent-reducer", metrics, logger);
    // Alive (and /readyz "starting") while it waits for NATS, however long that takes.
    const ops = await startOpsServer({ host: config.OPS_HOST, port: config.OPS_PORT, metrics });
    const tracing = await createTracing("agent-reducer");
    // No echo: the reducer follows its partitions' live lane for the drivers' reply chunks and
    // publishes its own runtime changes and previews there, which it would otherwise be sent
    // back (two to three per turn) only to drop them. Nothing it subscribes to wants its own
    // messages: feeds, watches and replies come from the server, lease probes of itself are
    // answered without asking, and an in-process driver has a connection of its own.
    const nc = await connectNats({ ...natsConnectionOptions(config), name: "agent-reducer", logger, noEcho: true });
    startup.natsConnected = Date.now();
    // Started while NATS elects leaders (a node restarting), each step waits for an answer.
    const waiting = { logger };
    const jsm = await untilNatsAnswers("JetStream manager", () => jetstreamManager(nc), waiting);
    await untilNatsAnswers("work streams", () => ensureWorkStreams(jsm, { replicas: config.NATS_STREAM_REPLICAS, logger }), waiting);
    // Registered once: a start-up step may run more than once while NATS does not answer.
    const onRefused = countRefusedAppends(metrics, "agent-reducer");
    const store = await untilNatsAnswers("event store", () => openServiceStore(nc, {
      service: "agent-reducer",
      partitionCount: config.PARTITION_COUNT,
      replicas: config.NATS_STREAM_REPLICAS,
      onRefused,
      signing,
    }), waiting);
    // A work item's publish waits for JetStream's ack as long as the store's appends do.
    const workPublisher = new JetStreamPublisher(nc, DEFAULT_PUBLISH_TIMEOUT_MS);
    const snapshots = await untilNatsAnswers("snapshot store", () => openSnapshotStore(nc, { replicas: config.NATS_STREAM_REPLICAS, publisher: workPublisher }), waiting);
    startup.storesOpened = Date.now();
    // Before the reducer: the first requests it decides are handed to it.
    const inProcess: StartedLlmDriver | undefined =
      driverConfig === undefined ? undefined : await startLlmDriver({ config: driverConfig, logger: logger.child({ driver: "in-process" }), metrics, streamCacheFedByCaller: true });
    if (inProcess !== undefined) startup.driverStarted = Date.now();
    const effects = natsReducerEffects({
      store,
      nc,
      workPublisher,
      logger,
      interruptTimeoutMs: config.REDUCER_INTERRUPT_TIMEOUT_MS,
      ...tracerOption(tracing),
      ...(inProcess === undefined ? {} : { inProcessDriver: inProcess.driver }),
    });
    const reducer = new ReducerService({
      id: config.REDUCER_ID ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
      nc,
      store,
      snapshots,
      effects,
      logger,
      metrics,
      leaseTtlMs: config.REDUCER_LEASE_TTL_MS,
      redriveAfterMs: config.REDUCER_REDRIVE_AFTER_MS,
      retention: {
        snapshotEveryEvents: config.REDUCER_SNAPSHOT_EVERY_EVENTS,
        snapshotIdleMs: config.REDUCER_SNAPSHOT_IDLE_MS,
        evictIdleMs: config.REDUCER_EVICT_IDLE_MS,
        checkpointEveryMs: config.REDUCER_CHECKPOINT_EVERY_MS,
      },
      kvReplicas: config.NATS_STREAM_REPLICAS,
      // Its driver's stream cache learns of new events from this replica's feeds, not a feed of its own.
      ...(inProcess?.driver.streamFeed === undefined ? {} : { partitionBatches: inProcess.driver.streamFeed }),
      policy: reactionPolicy({
        projectWorker: config.PROJECT_WORKER === "on",
        ...(config.PROJECT_AGENTS_MD_FILE ? { texts: { agentsMd: readFileSync(config.PROJECT_AGENTS_MD_FILE, "utf8").trim() } } : {}),
      }),
    });
    await reducer.start();
    startup.leasesStarted = Date.now();
    const readiness = trackReadiness(nc, {
      "partition lease loop running": () => reducer.running(),
      ...(inProcess === undefined ? {} : { "in-process driver consuming": () => inProcess.driver.consuming() && !inProcess.nc.isClosed() }),
    });
    ops.ready(readiness.unmet);
    logger.info(
      { opsPort: ops.port, startup, ...(inProcess === undefined ? {} : { inProcessDriver: { offline: inProcess.driver.offline, startup: inProcess.startup } }) },
      "agent-reducer ready",
    );
    // The driver first: the runs it stops go back to the queue through the reducer's publisher.
    return stopInOrder(readiness, async () => inProcess?.stop(), () => effects.handOversSettled(), () => reducer.stop(), () => ops.close(), () => store.close(), async () => workPublisher.close(), () => nc.drain(), () => tracing.shutdown());
  },
});
