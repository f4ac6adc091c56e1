// Runs a service's composition root: starts it, fails fast on start-up errors, and on SIGTERM
// or SIGINT stops it (drain NATS, close servers) and exits.

import type { Logger } from "pino";

/**
 * The global symbol's key under which a service bundle's loader (scripts/bundling.ts) records
 * how the service's code was compiled; the "started" log line reports it as `codeCache`.
 */
export const CODE_CACHE_STATUS_KEY = "agentrt.codeCache";

/** How long stop() may take unless a service says otherwise (the chart's grace periods build on it). */
export const DEFAULT_STOP_TIMEOUT_MS = 10_000;

export interface RunningService {
  stop(): Promise<void>;
}

export async function runService(options: {
  name: string;
  logger: Logger;
  start: () => Promise<RunningService>;
  /** Give up stopping after this long and exit anyway. */
  stopTimeoutMs?: number;
}): Promise<void> {
  const { logger } = options;
  let running: RunningService;
  try {
    running = await options.start();
  } catch (error) {
    logger.fatal({ err: error }, `${options.name} failed to start`);
    process.exit(1);
  }
  // How its code was compiled when it runs from a service bundle (scripts/bundling.ts, where
  // the values are listed): from the build's V8 code cache ("used"), from this node's own ("own"),
  // or from source because V8 refused the cache ("rejected, own cache written").
  const codeCache: unknown = (globalThis as Record<symbol, unknown>)[Symbol.for(CODE_CACHE_STATUS_KEY)];
  logger.info(codeCache === undefined ? {} : { codeCache }, `${options.name} started`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, `${options.name} stopping`);
    const timer = setTimeout(() => {
      logger.error(`${options.name} did not stop in time; exiting`);
      process.exit(1);
    }, options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS);
    timer.unref();
    running
      .stop()
      .then(() => process.exit(0))
      .catch((error: unknown) => {
        logger.error({ err: error }, `${options.name} failed to stop cleanly`);
        process.exit(1);
      });
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

/**
 * The one shutdown order of every service: report not ready first (so nothing new is routed
 * here), then each step in turn — the service's own work before the servers, stores and
 * connections it used.
 */
export function stopInOrder(readiness: { markStopping(): void }, ...steps: ReadonlyArray<() => Promise<unknown>>): RunningService {
  return {
    async stop() {
      readiness.markStopping();
      for (const step of steps) await step();
    },
  };
}
