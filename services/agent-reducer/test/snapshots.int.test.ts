// Per-agent snapshots and partition checkpoints on a real nats-server: a successor resumes the
// feed from the checkpoint and rebuilds each agent from its own snapshot plus the events after
// it; snapshots and checkpoints are written under continuous traffic, with no stop; an idle
// agent is evicted and rebuilt on its next event; a snapshot of another format is ignored.

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { Kvm } from "@nats-io/kv";
import type { EventInput } from "@agentrt/contract";
import { foldAgentEvents, initialAgentState } from "@agentrt/agent-core";
import { type FeedOptions, type ReadOptions } from "@agentrt/streams";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { type NatsServer, startNatsServer, testLogger, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReducerEffects } from "../src/effects.ts";
import { effectsOver, note } from "./worker-support.ts";
import { createBareAgent, say } from "../../../test/support/turns.ts";
import { PartitionWorker, type RetentionPolicy } from "../src/partition-worker.ts";
import { openSnapshotStore, SNAPSHOT_BUCKET, type SnapshotStore } from "../src/snapshots.ts";

const logger = testLogger("test");
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

// Appends through the module's store client, looked up when called (it is opened in beforeAll).
const effects: ReducerEffects = effectsOver({ append: (path, batch, options) => store.append(path, batch, options) });

async function bear(path: string, notes: number): Promise<void> {
  await store.append(path, [{ type: "agent/created", payload: {} }]);
  for (let i = 0; i < notes; i += 1) await store.append(path, [note(i)]);
}

/** The store, with every feed and read the worker asks for recorded. */
function watchedStore() {
  const feeds: FeedOptions[] = [];
  const reads: Array<{ path: string } & ReadOptions> = [];
  const watched = Object.create(store) as JetStreamEventStore;
  watched.feed = (options) => {
    feeds.push(options ?? {});
    return store.feed(options);
  };
  watched.read = (path, options) => {
    reads.push({ path, ...options });
    return store.read(path, options);
  };
  return { watched, feeds, reads };
}

async function foldedFromEvents(path: string) {
  return foldAgentEvents(initialAgentState(path), await store.read(path));
}

function worker(partition: number, snapshots: SnapshotStore, retention: Partial<RetentionPolicy> = {}, over: JetStreamEventStore = store) {
  return new PartitionWorker({ partition, store: over, snapshots, effects, logger, retention });
}

describe("per-agent snapshots and partition checkpoints", () => {
  it("a successor resumes from the checkpoint and rebuilds an agent from its own snapshot, reading nothing before it", async () => {
    const path = "/agents/snap/long";
    const partition = store.partitionOf(path);
    await bear(path, 41);
    const snapshots = await openSnapshotStore(nc);
    const first = worker(partition, snapshots);
    await first.start();
    await waitFor(() => first.processor(path)?.state.lastFoldedOffset === 42, { timeoutMs: 10_000 });
    const sequence = await first.checkpointNow();
    expect(sequence).toBeGreaterThan(0);
    await first.stop();
    expect((await snapshots.loadAgent(path))?.offset).toBe(42);
    const checkpoint = await snapshots.loadCheckpoint(partition);
    expect(checkpoint).toMatchObject({ sequence, pending: [] });

    const { watched, feeds, reads } = watchedStore();
    const successor = worker(partition, await openSnapshotStore(nc), {}, watched);
    await successor.start();
    expect(feeds).toEqual([{ partitions: [partition], afterSequence: sequence }]);
    // Nothing pending: the agent is not even loaded until its next event.
    expect(successor.processor(path)).toBeUndefined();
    await store.append(path, [note(41)]);
    await waitFor(() => successor.processor(path)?.state.lastFoldedOffset === 43, { timeoutMs: 10_000 });
    expect(reads.filter((r) => r.path === path)).toEqual([]);
    expect(successor.processor(path)!.state).toEqual(await foldedFromEvents(path));
    await successor.stop();
  });

  it("writes snapshots and checkpoints under continuous traffic, with no stop, and a successor resumes from them", async () => {
    const busy = "/agents/snap/busy";
    const partition = store.partitionOf(busy);
    await bear(busy, 1);
    const snapshots = await openSnapshotStore(nc);
    const first = worker(partition, snapshots, { snapshotEveryEvents: 20, snapshotIdleMs: 60_000, maintainEveryMs: 100 });
    await first.start();
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        await store.append(busy, [note(1000 + written)]);
        written += 1;
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    try {
      // The agent is never quiet for snapshotIdleMs, yet its snapshot and the checkpoint advance.
      await waitFor(async () => ((await snapshots.loadAgent(busy))?.offset ?? 0) > 40 && ((await snapshots.loadCheckpoint(partition))?.sequence ?? 0) > 40, { timeoutMs: 20_000 });
      expect(writing).toBe(true);
    } finally {
      writing = false;
      await writer;
    }
    // No checkpointNow: as if it died. Read after the stop: a maintenance round already running
    // when the traffic stopped may still write a later checkpoint, which is the one to resume from.
    await first.stop();
    const checkpoint = (await snapshots.loadCheckpoint(partition))!;

    const { watched, feeds } = watchedStore();
    const successor = worker(partition, await openSnapshotStore(nc), {}, watched);
    await successor.start();
    expect(feeds[0]).toEqual({ partitions: [partition], afterSequence: checkpoint.sequence });
    await store.append(busy, [note(0)]);
    const head = await store.lastOffset(busy);
    await waitFor(() => successor.processor(busy)?.state.lastFoldedOffset === head, { timeoutMs: 10_000 });
    expect(successor.processor(busy)!.state).toEqual(await foldedFromEvents(busy));
    await successor.stop();
  });

  it("given maintenance rounds far apart, then the checkpoint follows the feed on its own cadence", async () => {
    const path = "/agents/snap/checkpoint-cadence";
    const partition = store.partitionOf(path);
    const snapshots = await openSnapshotStore(nc);
    const w = worker(partition, snapshots, { maintainEveryMs: 600_000, checkpointEveryMs: 50 });
    await w.start();
    try {
      await bear(path, 3);
      const head = (await store.read(path)).length;
      await waitFor(() => w.processor(path)?.state.lastFoldedOffset === head, { what: "the agent folded" });
      const before = (await snapshots.loadCheckpoint(partition))?.sequence ?? 0;
      await store.append(path, [note(99)]);
      await waitFor(async () => ((await snapshots.loadCheckpoint(partition))?.sequence ?? 0) > before, { timeoutMs: 5_000, what: "a checkpoint past the last note, with no maintenance round" });
    } finally {
      await w.stop();
    }
  });

  it("evicts an idle agent and rebuilds it from its snapshot when its next event arrives", async () => {
    const path = "/agents/snap/idle";
    const partition = store.partitionOf(path);
    await bear(path, 5);
    const snapshots = await openSnapshotStore(nc);
    const { watched, reads } = watchedStore();
    const w = worker(partition, snapshots, { snapshotIdleMs: 50, evictIdleMs: 200, maintainEveryMs: 50 }, watched);
    await w.start();
    await waitFor(() => w.processor(path)?.state.lastFoldedOffset === 6, { timeoutMs: 10_000 });
    await waitFor(() => w.processor(path) === undefined, { timeoutMs: 10_000 });
    expect((await snapshots.loadAgent(path))?.offset).toBe(6);
    await store.append(path, [note(5)]);
    await waitFor(() => w.processor(path)?.state.lastFoldedOffset === 7, { timeoutMs: 10_000 });
    expect(w.processor(path)!.state).toEqual(await foldedFromEvents(path));
    expect(reads.filter((r) => r.path === path)).toEqual([]); // snapshot + the feed's batch: no read
    await w.stop();
  });

  it("leaves nothing of an evicted agent behind: no processor, and no view of its stream in the store client it appends through", async () => {
    // A store client of its own, so its cache holds only what this worker put there.
    const own = await JetStreamEventStore.open(nc, { partitionCount: 4 });
    const ownEffects: ReducerEffects = { ...effects, append: (path, batch) => own.append(path, batch), appendAtHead: async (path, batch, expectedLastOffset) => own.append(path, batch, { expectedLastOffset }) };
    const partition = store.partitionOf("/agents/snap/leaves-0");
    const paths = Array.from({ length: 40 }, (_, i) => `/agents/snap/leaves-${i}`).filter((path) => store.partitionOf(path) === partition);
    expect(paths.length).toBeGreaterThan(3);
    // An error on each stream, which the reducer transcribes: an append through its own client.
    const error = (i: number): EventInput => ({ type: "stream/error-occurred", payload: { message: `failure ${i}` } });
    for (const path of paths) await store.append(path, [{ type: "agent/created", payload: {} }, error(0)]);
    const w = new PartitionWorker({ partition, store: own, snapshots: await openSnapshotStore(nc), effects: ownEffects, logger, retention: { snapshotIdleMs: 50, evictIdleMs: 200, maintainEveryMs: 50 } });
    try {
      await w.start();
      const transcribed = async (path: string, count: number) => (await store.read(path)).filter((e) => e.type === "agents/context-added").length === count;
      for (const path of paths) await waitFor(() => transcribed(path, 1), { timeoutMs: 10_000 });
      // A view per agent in memory (each brought in by the feed, the record it came with being
      // its view): those appended through it, and others of the partition still resident.
      expect(own.cachedStreams).toBeGreaterThanOrEqual(paths.length);
      expect(own.cachedStreams).toBeLessThanOrEqual(w.residentAgents);
      await waitFor(() => w.residentAgents === 0, { timeoutMs: 10_000 });
      expect(own.cachedStreams).toBe(0);
      // Woken again, the agent appends at its stream's end as before: nothing it needed was dropped.
      const [woken] = paths;
      await store.append(woken!, [error(1)]);
      await waitFor(() => transcribed(woken!, 2), { timeoutMs: 10_000 });
      expect((await store.read(woken!)).map((e) => e.offset)).toEqual([1, 2, 3, 4, 5]);
      expect(w.processor(woken!)!.state).toEqual(await foldedFromEvents(woken!));
      await waitFor(() => w.residentAgents === 0 && own.cachedStreams === 0, { timeoutMs: 10_000 });
    } finally {
      await w.stop();
      await own.close();
    }
  });

  it("ignores a snapshot and a checkpoint of another format and rebuilds from the events", async () => {
    const path = "/agents/snap/old-format";
    const partition = store.partitionOf(path);
    await bear(path, 3);
    const bucket = await new Kvm(nc).create(SNAPSHOT_BUCKET, { history: 1 });
    const stale = { ...initialAgentState(path), lastFoldedOffset: 4, summary: { title: "from an old format" } };
    await bucket.put(`agents${path}`, JSON.stringify({ format: 1, streamPath: path, offset: 4, state: stale }));
    await bucket.put(`partition.${partition}`, JSON.stringify({ format: 1, partition, sequence: 999_999, pending: [] }));

    const { watched, feeds } = watchedStore();
    const w = worker(partition, await openSnapshotStore(nc), {}, watched);
    await w.start();
    expect(feeds[0]).toEqual({ partitions: [partition], afterSequence: 0 });
    await waitFor(() => w.processor(path)?.state.lastFoldedOffset === 4, { timeoutMs: 10_000 });
    expect(w.processor(path)!.state).toEqual(await foldedFromEvents(path));
    expect(w.processor(path)!.state.summary.title).toBeUndefined();
    await w.stop();
  });
  it("given an agent that is reacting whenever a checkpoint is written but idle in between, then the checkpoint moves past the batches it finished", async () => {
    // Busy agents under load are rarely idle at the moment a checkpoint is taken: the checkpoint
    // must learn that an agent reacted to its batches when it happens, not only when it looks.
    // Last in this file: the agent is left with an open request, which a later worker of its
    // partition would wake and keep resident.
    const path = "/agents/snap/never-idle-at-checkpoints";
    const partition = store.partitionOf(path);
    const batches: { sequence: number; content: unknown }[] = [];
    const feed = store.feed({ partitions: [partition] });
    void (async () => {
      for await (const batch of feed) batches.push({ sequence: batch.sequence, content: (batch.events[0]?.payload as { content?: unknown }).content });
    })();
    // Each user message after the first interrupts the open request: held here until released.
    const interrupting = (content: string) =>
      store.append(path, [{ type: "agents/context-added", payload: { role: "user", content, actor: { type: "user", origin: "web" }, llmRequestPolicy: { behaviour: "interrupt-current-request" } } }]);
    const held: Array<() => void> = [];
    const gated: ReducerEffects = { ...effects, interruptDriver: () => new Promise((resolve) => held.push(() => resolve(undefined))) };
    const w = new PartitionWorker({ partition, store, snapshots: await openSnapshotStore(nc), effects: gated, logger, retention: { maintainEveryMs: 600_000, checkpointEveryMs: 600_000 } });
    await w.start();
    try {
      await createBareAgent(store, path, 0);
      await say(store, path, "first");
      await waitFor(async () => (await store.read(path)).some((e) => e.type === "agent/llm-request-requested"), { what: "the first request" });
      await interrupting("second");
      await waitFor(() => held.length === 1, { what: "the second message's interrupt" });
      held.shift()!();
      await waitFor(() => w.processor(path)?.state.openRequest !== null && w.processor(path)?.isIdle() === true && (w.processor(path)?.state.lastFoldedOffset ?? 0) > 5, { what: "the second request, the agent idle" });
      await interrupting("third");
      await waitFor(() => held.length === 1, { what: "the third message's interrupt" });
      const third = await waitFor(() => batches.find((b) => b.content === "third"), { what: "the third message on the feed" });
      // The agent is reacting to "third" now, and was reacting at no checkpoint before: the
      // checkpoint stands right before its batch, not before its first.
      expect(await w.checkpoint()).toBe(third.sequence - 1);
    } finally {
      for (const release of held) release();
      await w.stop();
      await feed.close();
    }
  });
});
