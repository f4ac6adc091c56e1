// The safety net for lost work items, on a real nats-server with the reducer's real effects
// and the real work queue: a worker that takes an item and acks it without settling anything
// (what a worker failing mid-failover did in the chaos soak) must not leave the request or the
// script waiting for its expiry. The reducer issues the work again once the stream has been
// quiet for REDUCER_REDRIVE_AFTER_MS, as a new item (the queue's duplicate window would
// swallow a re-publish of the same one).

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { JetStreamEventStore, JetStreamPublisher } from "@agentrt/streams/jetstream";
import { type WorkConsumer, consumeWork, createLogger, ensureWorkStreams } from "@agentrt/service-kit";
import { type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsReducerEffects } from "../src/effects.ts";
import { PartitionWorker } from "../src/partition-worker.ts";
import { openSnapshotStore } from "../src/snapshots.ts";
import { createBareAgent, say } from "../../../test/support/turns.ts";

const logger = createLogger("test", "silent");
const REDRIVE_AFTER_MS = 1_000;
let server: NatsServer;
let nc: NatsConnection;
let store: JetStreamEventStore;
const workers: PartitionWorker[] = [];
const consumers: WorkConsumer[] = [];
/** Every work item taken from the queue, in order; each is acked unsettled (lost). */
const taken: Array<{ kind: "llm" | "script"; streamPath: string; key: number | string; at: number }> = [];

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  store = await JetStreamEventStore.open(nc, { partitionCount: 4 });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  await ensureWorkStreams(jsm);
  consumers.push(
    await consumeWork(js, jsm, { kind: "llm", durable: "lossy-driver", logger, handler: async (item) => (taken.push({ kind: "llm", streamPath: item.streamPath, key: item.requestOffset, at: Date.now() }), { type: "ack" }) }),
    await consumeWork(js, jsm, { kind: "script", durable: "lossy-host", logger, handler: async (item) => (taken.push({ kind: "script", streamPath: item.streamPath, key: item.executionId, at: Date.now() }), { type: "ack" }) }),
  );
  const snapshots = await openSnapshotStore(nc);
  const effects = natsReducerEffects({ store, nc, workPublisher: new JetStreamPublisher(nc, 5_000), logger, interruptTimeoutMs: 200 });
  for (let partition = 0; partition < store.partitionCount; partition += 1) {
    const worker = new PartitionWorker({ partition, store, snapshots, effects, logger, redriveAfterMs: REDRIVE_AFTER_MS });
    workers.push(worker);
    await worker.start();
  }
});

afterAll(async () => {
  for (const w of workers) await w.stop();
  for (const c of consumers) await c.stop();
  await store?.close();
  await nc?.close();
  await server?.stop();
});

const takenFor = (kind: "llm" | "script", streamPath: string, key: number | string) => taken.filter((t) => t.kind === kind && t.streamPath === streamPath && t.key === key);

describe("outstanding work whose item was lost is issued again", () => {
  it("an open request whose item was acked unsettled is handed to the drivers again, later each time", async () => {
    const path = "/agents/redrive/request";
    await createBareAgent(store, path, 0);
    await say(store, path, "hello");
    let requestOffset = 0;
    let requestedAtMs = 0;
    await waitFor(async () => {
      const request = (await store.read(path)).find((e) => e.type === "agent/llm-request-requested");
      requestOffset = request?.offset ?? 0;
      requestedAtMs = request === undefined ? 0 : Date.parse(request.createdAt);
      return requestOffset > 0;
    }, { timeoutMs: 10_000 });
    // The first item is taken and lost; the request stays open on the stream.
    await waitFor(() => takenFor("llm", path, requestOffset).length >= 1, { timeoutMs: 10_000 });
    await waitFor(() => takenFor("llm", path, requestOffset).length >= 3, { timeoutMs: 15_000 });
    const [, second, third] = takenFor("llm", path, requestOffset);
    // Issued again once the stream was quiet for the quiet time since its last event (the
    // request), and the next one only after twice that again (the core's backoff). Measured
    // from the event's own timestamp: delivery latency under load only makes items later.
    expect(second!.at - requestedAtMs).toBeGreaterThanOrEqual(REDRIVE_AFTER_MS);
    expect(third!.at - requestedAtMs).toBeGreaterThanOrEqual(3 * REDRIVE_AFTER_MS);
    // Nothing was appended on the stream for it: the request is still the open one.
    expect((await store.read(path)).filter((e) => e.type === "agent/llm-request-settled")).toEqual([]);
  });

  it("a script whose item was acked unstarted is handed to the hosts again; a settled one is not", async () => {
    const path = "/agents/redrive/script";
    await createBareAgent(store, path, 60_000);
    const expiresAt = new Date(Date.now() + 600_000).toISOString();
    await store.append(path, [{ type: "capability-host/script-run-requested", payload: { code: "return 1;", executionId: "agent-output:7", expiresAt } }]);
    await waitFor(() => takenFor("script", path, "agent-output:7").length >= 2, { timeoutMs: 15_000 });
    await store.append(path, [{ type: "capability-host/script-run-settled", payload: { executionId: "agent-output:7", settlement: { status: "succeeded", result: 1 } } }]);
    const settledAt = Date.now();
    // Settled: the reducer folds it, and over the next re-issue times (an observation window,
    // the absence of an item cannot be awaited) issues nothing more for it.
    const worker = workers[store.partitionOf(path)]!;
    await waitFor(() => worker.processor(path)?.state.activeScriptExecutions.length === 0, { timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 4 * REDRIVE_AFTER_MS));
    expect(takenFor("script", path, "agent-output:7").filter((t) => t.at > settledAt + 500)).toEqual([]);
  });
});
