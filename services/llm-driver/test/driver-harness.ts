// Shared set-up for the driver's integration tests: a real nats-server (harness), the event
// store, the work-queue stream, the fake model, and in-process drivers wired exactly like
// main.ts wires them. Also a faithful stand-in for the reducer's scheduling (fold + the pure
// decide-at-head) so retry tests see the same requests the reducer would append.

import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { decideAtHead, foldAgentEvents, initialAgentState, type AgentState } from "@agentrt/agent-core";
import { CONTRACT_VERSION, type AgentEvent, type EventInput } from "@agentrt/contract";
import { createLogger, createMetrics, ensureWorkStreams, publishWork } from "@agentrt/service-kit";
import { type EventStore } from "@agentrt/streams";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { birthEvents, type FakeModel, type NatsServer, startFakeModel, startNatsServer, userMessage } from "@agentrt/testing";
import { createDriverMetrics } from "../src/metrics.ts";
import { LlmDriver } from "../src/driver.ts";
import type { ProvidersConfig } from "../src/providers.ts";
import { type ContextWindowTable, DEFAULT_CONTEXT_WINDOWS } from "../src/usage.ts";

export interface DriverEnv {
  readonly nats: NatsServer;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly store: JetStreamEventStore;
  readonly model: FakeModel;
  /** Provider config pointing `openai/*` at the fake model. */
  readonly providers: ProvidersConfig;
  startDriver(options?: { idleTimeoutMs?: number; providers?: ProvidersConfig; contextWindows?: ContextWindowTable; streamCache?: boolean; maxNotVisibleDeliveries?: number; concurrency?: number; tenantDepth?: number }): Promise<LlmDriver>;
  close(): Promise<void>;
}

export const TEST_PARTITIONS = 8;

export async function openTestStore(nc: NatsConnection): Promise<JetStreamEventStore> {
  return JetStreamEventStore.open(nc, { partitionCount: TEST_PARTITIONS });
}

export async function startDriverEnv(): Promise<DriverEnv> {
  const nats = await startNatsServer();
  const nc = await connect({ servers: nats.url });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  await ensureWorkStreams(jsm);
  const store = await openTestStore(nc);
  const model = await startFakeModel();
  const providers: ProvidersConfig = {
    openai: { baseUrl: model.url, apiKey: "test-key", api: "chat", promptCacheKey: true },
    // The same fake model through the Responses API, for agents whose model is `resp/…`.
    resp: { baseUrl: model.url, apiKey: "test-key", api: "responses", promptCacheKey: false, models: { "gpt-5": "gpt-5-responses" } },
  };
  const drivers: LlmDriver[] = [];
  const logger = createLogger("llm-driver-test", process.env.LOG_LEVEL ?? "error");
  return {
    nats,
    nc,
    js,
    jsm,
    store,
    model,
    providers,
    async startDriver(options = {}) {
      // Wired like main.ts: the stream cache follows the feed from the store's head.
      const head = (await jsm.streams.info(store.streamName)).state.last_seq;
      const driver = new LlmDriver({
        ...(options.streamCache === false ? {} : { streamCache: { afterSequence: head } }),
        nc,
        js,
        jsm,
        store,
        providers: options.providers ?? providers,
        logger,
        metrics: createDriverMetrics(createMetrics("llm-driver", { collectDefaults: false })),
        settings: { idleTimeoutMs: options.idleTimeoutMs ?? 45_000, contextWindows: options.contextWindows ?? DEFAULT_CONTEXT_WINDOWS },
        work: {
          ackWaitMs: 5_000,
          heartbeatMs: 1_000,
          ...(options.maxNotVisibleDeliveries === undefined ? {} : { maxNotVisibleDeliveries: options.maxNotVisibleDeliveries }),
          ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
          ...(options.tenantDepth === undefined ? {} : { tenantDepth: options.tenantDepth }),
        },
      });
      await driver.start();
      drivers.push(driver);
      return driver;
    },
    async close() {
      for (const driver of drivers) await driver.stop();
      await model.close();
      await store.close();
      await nc.close();
      await nats.stop();
    },
  };
}

export { birthEvents, userMessage, waitForEvent } from "@agentrt/testing";

export function requested(model = "openai/gpt-5.6-terra", expiresInMs = 600_000): EventInput {
  return {
    type: "agent/llm-request-requested",
    payload: { model, expiresAt: new Date(Date.now() + expiresInMs).toISOString(), contractVersion: CONTRACT_VERSION },
  };
}

/** Appends a batch and returns the committed events. */
export async function append(store: EventStore, path: string, events: readonly EventInput[]): Promise<AgentEvent[]> {
  const result = await store.append(path, events);
  if (result.status !== "committed") throw new Error(`append to ${path} was a duplicate`);
  return [...result.events];
}

/** Hands request R to the drivers the way the reducer does. */
export async function publishLlmWork(env: Pick<DriverEnv, "js" | "store">, streamPath: string, requestOffset: number, redrive = false): Promise<void> {
  await publishWork(env.js, "llm", env.store.partitionOf(streamPath), { streamPath, requestOffset }, { redrive });
}

/** Seeds an agent with a user message and a request; returns R. */
export async function seedTurn(
  env: Pick<DriverEnv, "js" | "store">,
  path: string,
  text = "hello",
  options: { interpretResponses?: boolean; model?: string } = {},
): Promise<number> {
  await append(env.store, path, [...birthEvents(options), userMessage(text)]);
  const [request] = await append(env.store, path, [requested(options.model)]);
  return (request as AgentEvent).offset;
}

export async function foldStream(store: EventStore, path: string): Promise<AgentState> {
  return foldAgentEvents(initialAgentState(path), await store.read(path));
}

/**
 * One step of the reducer's scheduling, from the pure core: fold, decide at the head, append
 * what it decides (a debounced, backed-off request), hand a new request to the drivers.
 * Returns the appended request's offset, or the time to decide again.
 */
export async function reducerStep(env: Pick<DriverEnv, "js" | "store">, path: string, nowMs = Date.now()): Promise<{ requestOffset?: number; wakeAtMs: number | null }> {
  const state = await foldStream(env.store, path);
  const decision = decideAtHead(state, { nowMs, runningRequestOffsets: state.openRequest ? [state.openRequest.requestedAtOffset] : [] });
  let requestOffset: number | undefined;
  for (const batch of decision.appends) {
    const result = await env.store.append(path, batch);
    const request = result.events.find((e) => e.type === "agent/llm-request-requested");
    if (request !== undefined && result.status === "committed") {
      requestOffset = request.offset;
      await publishLlmWork(env, path, request.offset);
    }
  }
  return { requestOffset, wakeAtMs: decision.wakeAtMs };
}
