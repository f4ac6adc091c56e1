// Composition root of the llm-driver: config, logger, metrics, the driver (start.ts: NATS, the
// JetStream event store, the work-queue stream, providers or the offline model) and the ops
// endpoint. SIGTERM stops claiming work, lets running requests finish for up to LLM_DRAIN_MS
// (those left go back to the queue), and drains NATS.

import { createLogger, createMetrics, DEFAULT_STOP_TIMEOUT_MS, loadConfig, runService, startOpsServer, stopInOrder, trackReadiness } from "@agentrt/service-kit";
import { driverConfigSchema } from "./config.ts";
import { startLlmDriver } from "./start.ts";

// Start-up phases in epoch ms, logged with "ready": a restarted driver is how a killed one's
// turn resumes when it was the only one, so where its start-up goes is worth seeing.
const startup: Record<string, number> = { processStarted: Math.round(performance.timeOrigin), modulesLoaded: Date.now() };
const config = loadConfig(driverConfigSchema);
const logger = createLogger("llm-driver", config.LOG_LEVEL);

// Not awaited at the top level: the bundle is CommonJS (scripts/bundling.ts), and runService settles its own errors.
void runService({
  name: "llm-driver",
  logger,
  // The drain, then the rest of the stop (claims, store, NATS) within the usual limit.
  stopTimeoutMs: config.LLM_DRAIN_MS + DEFAULT_STOP_TIMEOUT_MS,
  async start() {
    const metrics = createMetrics("llm-driver");
    // Alive (and /readyz "starting") while it waits for NATS, however long that takes.
    const ops = await startOpsServer({ host: config.OPS_HOST, port: config.OPS_PORT, metrics });
    const started = await startLlmDriver({ config, logger, metrics, startup });
    const readiness = trackReadiness(started.nc, { "request consumer running": () => started.driver.consuming() });
    ops.ready(readiness.unmet);
    logger.info({ opsPort: ops.port, offline: started.driver.offline, startup }, "llm-driver ready");
    return stopInOrder(readiness, () => started.stop(), () => ops.close());
  },
});
