// Snapshots on a real nats-server: a partition worker writes its folded states to the object
// store, and its successor restores them and follows the feed from the snapshot's sequence
// instead of replaying every stream from offset 1.

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import type { EventInput } from "@agentrt/contract";
import { type FeedOptions, JetStreamEventStore } from "@agentrt/streams";
import { createLogger } from "@agentrt/service-kit";
import { type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ReducerEffects } from "../src/effects.ts";
import { PartitionWorker } from "../src/partition-worker.ts";
import { openSnapshotStore } from "../src/snapshots.ts";

const logger = createLogger("test", "silent");
let server: NatsServer;
let nc: NatsConnection;
let store: JetStreamEventStore;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  store = await JetStreamEventStore.open(nc, { partitionCount: 4 });
});
afterAll(async () => {
  await store.close();
  await nc.close();
  await server.stop();
});

const effects: ReducerEffects = {
  now: Date.now,
  append: async (path, batch) => void (await store.append(path, batch)),
  appendAtHead: async (path, batch, expectedLastOffset) => store.append(path, batch, { expectedLastOffset }),
  publishLlmWork: async () => undefined,
  publishScriptWork: async () => undefined,
  interruptDriver: async () => undefined,
  publishRuntime: async () => undefined,
  publishPreviews: async () => undefined,
};

it("a successor restores the partition snapshot and resumes the feed after it", async () => {
  const path = "/agents/snap/long";
  const partition = store.partitionOf(path);
  await store.append(path, [
    { type: "agent/created", payload: {} },
    { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 600_000 } } },
  ]);
  const say = (i: number): EventInput => ({ type: "agents/context-added", payload: { role: "user", content: `message ${i}`, actor: { type: "user", origin: "web" } } });
  for (let i = 0; i < 40; i += 1) await store.append(path, [say(i)]);

  const snapshots = await openSnapshotStore(nc);
  const first = new PartitionWorker({ partition, store, snapshots, effects, logger, snapshotEveryEvents: 10 });
  await first.start();
  await waitFor(() => first.processor(path)?.state.lastFoldedOffset === 42, { timeoutMs: 10_000 });
  expect(await first.snapshot()).toBe(true);
  const folded = first.processor(path)!.state;
  await first.stop();
  const saved = await snapshots.load(partition);
  expect(saved?.sequence).toBeGreaterThan(0);
  expect(saved?.streams.find((s) => s.streamPath === path)?.lastFoldedOffset).toBe(42);

  // The successor must ask the feed for what follows the snapshot, not for everything.
  const asked: FeedOptions[] = [];
  const watched = Object.create(store) as JetStreamEventStore;
  watched.feed = (options) => {
    asked.push(options ?? {});
    return store.feed(options);
  };
  const successor = new PartitionWorker({ partition, store: watched, snapshots: await openSnapshotStore(nc), effects, logger, snapshotEveryEvents: 10 });
  await successor.start();
  expect(asked).toEqual([{ partitions: [partition], afterSequence: saved!.sequence }]);
  expect(successor.processor(path)?.state).toEqual(folded);
  await store.append(path, [say(40)]);
  await waitFor(() => successor.processor(path)?.state.lastFoldedOffset === 43, { timeoutMs: 10_000 });
  await successor.stop();
});
