// A reducer that runs its llm-driver in its own process (REDUCER_LLM_DRIVER=in-process), on a
// real nats-server with the reducer's real effects, a real driver (the `openai` client against
// the fake model's HTTP server) and the real work queue: a request reaches the driver without a
// work item; when the driver has no room, or a handed-over run must be tried again (stopped by
// shutdown), the request goes to the queue and a driver takes it from there, settled once.

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { JetStreamEventStore, JetStreamPublisher } from "@agentrt/streams/jetstream";
import { createLogger, createMetrics, ensureWorkStreams, WORK_STREAMS } from "@agentrt/service-kit";
import { createDriverMetrics, DEFAULT_CONTEXT_WINDOWS, LlmDriver } from "@agentrt/llm-driver";
import type { AgentEvent } from "@agentrt/contract";
import { type FakeModel, type NatsServer, startFakeModel, startNatsServer, waitFor } from "@agentrt/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { natsReducerEffects } from "../src/effects.ts";
import { PartitionWorker } from "../src/partition-worker.ts";
import { openSnapshotStore } from "../src/snapshots.ts";
import { createBareAgent, lastUserContent, say, waitForAssistant } from "../../../test/support/turns.ts";

const logger = createLogger("test", "silent");
let server: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let store: JetStreamEventStore;
let model: FakeModel;
let running: Array<{ stop(): Promise<unknown> }> = [];

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  jsm = await jetstreamManager(nc);
  await ensureWorkStreams(jsm);
  store = await JetStreamEventStore.open(nc, { partitionCount: 4 });
  // "slow …" is answered over about a second, anything else at once.
  model = await startFakeModel({
    defaultReply: (request) => {
      const said = lastUserContent(request.body);
      return said.startsWith("slow") ? { text: `answer to ${said} in many small words that take their time`, tokensPerSecond: 12 } : { text: `answer to ${said}` };
    },
  });
});

afterEach(async () => {
  for (const r of running.reverse()) await r.stop();
  running = [];
});

afterAll(async () => {
  await model?.close();
  await store?.close();
  await nc?.close();
  await server?.stop();
});

async function startDriver(concurrency: number, options: { store?: JetStreamEventStore; fedByReducer?: boolean; drainMs?: number } = {}): Promise<LlmDriver> {
  const driver = new LlmDriver({
    nc,
    js: jetstream(nc),
    jsm,
    store: options.store ?? store,
    providers: { openai: { baseUrl: model.url, apiKey: "test-key", api: "chat", promptCacheKey: true } },
    logger,
    metrics: createDriverMetrics(createMetrics("llm-driver", { collectDefaults: false })),
    settings: { idleTimeoutMs: 45_000, contextWindows: DEFAULT_CONTEXT_WINDOWS },
    streamCache: { afterSequence: options.fedByReducer === true ? "fed by caller" : (await jsm.streams.info(store.streamName)).state.last_seq },
    work: { ackWaitMs: 5_000, heartbeatMs: 1_000, concurrency, ...(options.drainMs === undefined ? {} : { drainMs: options.drainMs }) },
  });
  await driver.start();
  running.push(driver);
  return driver;
}

/** The reducer's partition workers, handing requests to `driver` in its process. */
async function startReducer(driver: LlmDriver): Promise<void> {
  const snapshots = await openSnapshotStore(nc);
  const workPublisher = new JetStreamPublisher(nc, 5_000);
  const effects = natsReducerEffects({ store, nc, workPublisher, logger, interruptTimeoutMs: 500, inProcessDriver: driver });
  const batchSink = driver.streamFeed;
  for (let partition = 0; partition < store.partitionCount; partition += 1) {
    const worker = new PartitionWorker({ partition, store, snapshots, effects, logger, ...(batchSink === undefined ? {} : { batchSink }) });
    await worker.start();
    running.push(worker);
  }
  running.push({ stop: async () => workPublisher.close() });
}

/** Messages ever stored on the llm work stream (items are removed when acked; the sequence stays). */
const llmItemsEverQueued = async () => (await jsm.streams.info(WORK_STREAMS.llm)).state.last_seq;

const settlementsOf = (events: readonly AgentEvent[]) => events.filter((e) => e.type === "agent/llm-request-settled");

/** The stream once its reply containing `answer` is stored. */
async function untilAnswered(path: string, answer: string): Promise<AgentEvent[]> {
  await waitForAssistant(store, path, answer, 20_000);
  return store.read(path);
}

describe("a reducer with its llm-driver in its own process", () => {
  it("hands a request to the driver directly: answered, and no work item is ever queued", async () => {
    const driver = await startDriver(4);
    await startReducer(driver);
    const before = await llmItemsEverQueued();
    const path = "/agents/in-process/direct";
    await createBareAgent(store, path, 0);
    await say(store, path, "hello");
    const events = await untilAnswered(path, "answer to hello");
    await say(store, path, "and again");
    const later = await untilAnswered(path, "answer to and again");
    expect(settlementsOf(later).map((e) => e.type === "agent/llm-request-settled" && e.payload.result.status)).toEqual(["succeeded", "succeeded"]);
    expect(settlementsOf(events)).toHaveLength(1);
    expect(await llmItemsEverQueued()).toBe(before);
  });

  it("feeds the driver's stream cache from its own partition feeds: the driver follows no feed and reads an agent's stream once", async () => {
    // The driver's own store client (its NATS user's, in production), counted.
    const driverStore = await JetStreamEventStore.open(nc, { partitionCount: 4 });
    running.push({ stop: () => driverStore.close() });
    const calls = { read: 0, feed: 0 };
    for (const name of ["read", "feed"] as const) {
      const original = (driverStore[name] as (...args: unknown[]) => unknown).bind(driverStore);
      (driverStore as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
        calls[name] += 1;
        return original(...args);
      };
    }
    const driver = await startDriver(4, { store: driverStore, fedByReducer: true });
    expect(driver.streamFeed).toBeDefined();
    await startReducer(driver);
    const path = "/agents/in-process/fed";
    await createBareAgent(store, path, 0);
    for (const said of ["one", "two", "three"]) {
      await say(store, path, said);
      await untilAnswered(path, `answer to ${said}`);
    }
    expect(settlementsOf(await store.read(path)).map((e) => e.type === "agent/llm-request-settled" && e.payload.result.status)).toEqual(["succeeded", "succeeded", "succeeded"]);
    // The first turn read the stream; the others were served from what the reducer fed.
    expect(calls).toEqual({ read: 1, feed: 0 });
  });

  it("puts a request on the work queue when the driver has no room, and the driver takes it from there", async () => {
    const driver = await startDriver(1);
    await startReducer(driver);
    const before = await llmItemsEverQueued();
    const paths = ["/agents/in-process/full-a", "/agents/in-process/full-b"];
    for (const path of paths) await createBareAgent(store, path, 0);
    await say(store, paths[0]!, "slow first");
    await waitFor(() => model.requests.some((r) => r.rawBody.includes("slow first")), { timeoutMs: 10_000 });
    await say(store, paths[1]!, "second");
    const [a, b] = await Promise.all([untilAnswered(paths[0]!, "answer to slow first"), untilAnswered(paths[1]!, "answer to second")]);
    expect(settlementsOf(a)).toHaveLength(1);
    expect(settlementsOf(b)).toHaveLength(1);
    // The first was handed over, the second queued while the first ran.
    expect(await llmItemsEverQueued()).toBe(before + 1);
  });

  it("puts a handed-over request its driver stopped running (shutdown) on the queue, where another driver settles it once", async () => {
    // No drain: the run still streaming when it stops is stopped at once (as at a drain's end).
    const inProcess = await startDriver(4, { drainMs: 0 });
    await startReducer(inProcess);
    const before = await llmItemsEverQueued();
    const path = "/agents/in-process/handed-back";
    await createBareAgent(store, path, 0);
    await say(store, path, "slow and interrupted by a shutdown");
    await waitFor(() => model.requests.some((r) => r.rawBody.includes("slow and interrupted") && r.progress.tokensSent > 0), { timeoutMs: 10_000 });
    await inProcess.stop();
    running = running.filter((r) => r !== inProcess);
    expect(inProcess.runHandedOver(path, 1)).toBeUndefined(); // a stopped driver takes nothing
    await waitFor(async () => (await llmItemsEverQueued()) === before + 1, { timeoutMs: 5_000 });
    // Another driver (another process's) takes the item from the queue.
    await startDriver(4);
    const events = await untilAnswered(path, "answer to slow and interrupted");
    expect(settlementsOf(events)).toHaveLength(1);
    expect(model.requests.filter((r) => r.rawBody.includes("slow and interrupted"))).toHaveLength(2);
  });

  it("lets a handed-over request under way when its driver stops finish there (the drain): one model call, settled once, nothing queued", async () => {
    const inProcess = await startDriver(4);
    await startReducer(inProcess);
    const before = await llmItemsEverQueued();
    const path = "/agents/in-process/drained";
    await createBareAgent(store, path, 0);
    await say(store, path, "slow and finished while stopping");
    await waitFor(() => model.requests.some((r) => r.rawBody.includes("slow and finished") && r.progress.tokensSent > 0), { timeoutMs: 10_000 });
    await inProcess.stop();
    running = running.filter((r) => r !== inProcess);
    // Stopped only once its run was over: the reply is already stored.
    const events = await store.read(path);
    expect(settlementsOf(events)).toHaveLength(1);
    expect(JSON.stringify(events)).toContain("answer to slow and finished while stopping in many small words");
    const calls = model.requests.filter((r) => r.rawBody.includes("slow and finished"));
    expect(calls).toHaveLength(1);
    expect(calls[0]?.progress.clientAborted).toBe(false);
    expect(await llmItemsEverQueued()).toBe(before);
  });
});
