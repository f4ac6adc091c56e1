// Bringing an agent into memory on a real nats-server, and what it costs the rest of the
// partition and the agent's own first append: a takeover's pending agents being rebuilt hold
// up only their own batches (a fresh agent of the partition is served meanwhile, and the
// checkpoint stays before what was set aside), and an evicted agent woken by its next event
// appends its reaction without looking anything up in the store (its snapshot says the key
// index holds its keys; the feed's record is the view to append after).

import { connect } from "@nats-io/transport-node";
import type { Msg, NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import type { EventInput } from "@agentrt/contract";
import { foldAgentEvents, initialAgentState } from "@agentrt/agent-core";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { type NatsServer, startNatsServer, testLogger, userMessage, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { effectsOver, note } from "./worker-support.ts";
import { PartitionWorker } from "../src/partition-worker.ts";
import { openSnapshotStore, SNAPSHOT_BUCKET, type SnapshotStore } from "../src/snapshots.ts";

const logger = testLogger("test");
let server: NatsServer;
const connections: NatsConnection[] = [];
const stores: JetStreamEventStore[] = [];
let store: JetStreamEventStore;

async function connection(inboxPrefix?: string): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url, ...(inboxPrefix === undefined ? {} : { inboxPrefix }) });
  connections.push(nc);
  return nc;
}
async function openStore(nc: NatsConnection): Promise<JetStreamEventStore> {
  const opened = await JetStreamEventStore.open(nc, { partitionCount: 4 });
  stores.push(opened);
  return opened;
}

beforeAll(async () => {
  server = await startNatsServer();
  store = await openStore(await connection());
});
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const nc of connections) await nc.close();
  await server.stop();
});

/** An error on the stream: the reducer transcribes it (a keyed append of its own). */
const error = (i: number): EventInput => ({ type: "stream/error-occurred", payload: { message: `failure ${i}` } });
const transcribed = async (path: string, count: number) => (await store.read(path)).filter((e) => e.type === "agents/context-added").length === count;

function pathsOnOnePartition(prefix: string, count: number): string[] {
  const partition = store.partitionOf(`${prefix}-0`);
  const paths: string[] = [];
  for (let i = 0; paths.length < count; i += 1) if (store.partitionOf(`${prefix}-${i}`) === partition) paths.push(`${prefix}-${i}`);
  return paths;
}

/** The snapshot store with the agent reads of `gated` paths held until `open()`. */
function gatedSnapshots(inner: SnapshotStore, gated: ReadonlySet<string>) {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const asked = new Set<string>();
  const snapshots: SnapshotStore = {
    ...inner,
    loadAgent: async (path) => {
      if (gated.has(path)) {
        asked.add(path);
        await opened;
      }
      return inner.loadAgent(path);
    },
  };
  return { snapshots, asked, open };
}

describe("bringing agents into memory", () => {
  it("a takeover's pending agents being rebuilt hold up only their own batches: a fresh agent's message is requested first, and the checkpoint stays before them", async () => {
    const [fresh, ...pending] = pathsOnOnePartition("/agents/bring-in/takeover", 13);
    const partition = store.partitionOf(fresh!);
    for (const path of pending) await store.append(path, [{ type: "agent/created", payload: {} }, note(0)]);
    const snapshots = await openSnapshotStore(await connection());
    const first = new PartitionWorker({ partition, store, snapshots, effects: effectsOver(store), logger });
    await first.start();
    for (const path of pending) await waitFor(() => first.processor(path)?.state.lastFoldedOffset === 2, { timeoutMs: 10_000 });
    const sequence = await first.checkpointNow();
    await first.stop();
    // Each pending agent has events after the checkpoint, and the checkpoint names them all as
    // pending (as if each had a timer running when its replica died).
    const jsm = await jetstreamManager(connections[0]!);
    const beforeTheirEvents = (await jsm.streams.info(store.streamName)).state.last_seq;
    for (const path of pending) await store.append(path, [note(1)]);
    await snapshots.saveCheckpoint({ ...(await snapshots.loadCheckpoint(partition))!, sequence, pending });
    // The fresh agent's message comes after all of their events on the feed.
    await store.append(fresh!, [{ type: "agent/created", payload: {} }, { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 0 } } }, userMessage("hello")]);
    const requested = async () => (await store.read(fresh!)).some((e) => e.type === "agent/llm-request-requested");

    const gate = gatedSnapshots(snapshots, new Set(pending));
    const successor = new PartitionWorker({ partition, store, snapshots: gate.snapshots, effects: effectsOver(store), logger, retention: { maintainEveryMs: 50 } });
    try {
      await successor.start();
      // Requested while every pending agent is still waiting for its snapshot.
      await waitFor(requested, { timeoutMs: 10_000, what: "the fresh agent's request while the pending agents are being rebuilt" });
      expect(gate.asked.size).toBe(pending.length);
      for (const path of pending) expect(successor.processor(path)?.state.lastFoldedOffset ?? 0).toBeLessThan(3);
      // The checkpoint written once the fresh agent's request is open (it is pending then) does
      // not pass the batches set aside: a successor would otherwise never fold them.
      const written = await waitFor(async () => {
        const checkpoint = await snapshots.loadCheckpoint(partition);
        return checkpoint?.pending.includes(fresh!) === true ? checkpoint : undefined;
      }, { timeoutMs: 10_000, what: "a checkpoint naming the fresh agent pending" });
      expect(written.sequence).toBeLessThanOrEqual(beforeTheirEvents);
      expect([...written.pending].sort()).toEqual([...pending, fresh!].sort());

      gate.open();
      for (const path of pending) await waitFor(() => successor.processor(path)?.state.lastFoldedOffset === 3, { timeoutMs: 10_000 });
      for (const path of pending) expect(successor.processor(path)!.state).toEqual(foldAgentEvents(initialAgentState(path), await store.read(path)));
      await waitFor(async () => ((await snapshots.loadCheckpoint(partition))?.sequence ?? 0) > beforeTheirEvents, { timeoutMs: 10_000 });
    } finally {
      gate.open();
      await successor.stop();
    }
  });

  it("an evicted agent woken by its next event appends its reaction with no look-up: neither the stream's end nor the key index's marker is read", async () => {
    // The worker's store client on a connection of its own, whose requests are told apart by their reply inbox.
    const reducerStore = await openStore(await connection("_INBOX_woken_reducer"));
    const snapshots = await openSnapshotStore(await connection("_INBOX_woken_snapshots"));
    const [path] = pathsOnOnePartition("/agents/bring-in/woken", 1);
    const partition = store.partitionOf(path!);
    await store.append(path!, [{ type: "agent/created", payload: {} }, error(0)]);
    const w = new PartitionWorker({ partition, store: reducerStore, snapshots, effects: effectsOver(reducerStore), logger, retention: { snapshotIdleMs: 50, evictIdleMs: 200, maintainEveryMs: 50 } });
    const spy = await connection();
    const gets: Array<{ subject: string; reply: string }> = [];
    const record = (_: Error | null, msg: Msg): void => void gets.push({ subject: msg.subject, reply: msg.reply ?? "" });
    spy.subscribe("$JS.API.DIRECT.GET.>", { callback: record });
    spy.subscribe("$JS.API.STREAM.MSG.GET.>", { callback: record });
    await spy.flush();
    try {
      await w.start();
      await waitFor(() => transcribed(path!, 1), { timeoutMs: 10_000 });
      await waitFor(() => w.processor(path!) === undefined, { timeoutMs: 10_000, what: "the agent evicted" });
      expect((await snapshots.loadAgent(path!))?.keysIndexed).toBe(true);

      // Everything the spy was sent so far (this test's own snapshot read just above among it) is
      // in before the count starts.
      await spy.flush();
      gets.length = 0;
      await store.append(path!, [error(1)]);
      await waitFor(() => transcribed(path!, 2), { timeoutMs: 10_000 });
      await spy.flush();
      const byReducer = gets.filter((g) => g.reply.startsWith("_INBOX_woken_reducer"));
      const snapshotReads = gets.filter((g) => g.reply.startsWith("_INBOX_woken_snapshots") && g.subject.includes(SNAPSHOT_BUCKET));
      // Its snapshot is all it reads; its append goes after the record the feed showed.
      expect(byReducer.map((g) => g.subject)).toEqual([]);
      expect(snapshotReads.length).toBe(1);
      expect((await store.read(path!)).map((e) => e.offset)).toEqual([1, 2, 3, 4, 5]);
      expect(w.processor(path!)!.state).toEqual(foldAgentEvents(initialAgentState(path!), await store.read(path!)));
    } finally {
      await w.stop();
    }
  });
});
