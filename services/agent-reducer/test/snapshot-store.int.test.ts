// The snapshot bucket written and read on the reducer's publisher (its inbox), as main.ts opens
// it: what it writes, the KV client reads, and the other way round; a deleted entry is no
// snapshot; and no load or save is a nats.js request of its own.

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { Kvm } from "@nats-io/kv";
import { foldAgentEvents, initialAgentState } from "@agentrt/agent-core";
import { JetStreamPublisher } from "@agentrt/streams/jetstream";
import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentSnapshot, openSnapshotStore, SNAPSHOT_BUCKET, SNAPSHOT_FORMAT } from "../src/snapshots.ts";

let server: NatsServer;
let nc: NatsConnection;
let publisher: JetStreamPublisher;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  publisher = new JetStreamPublisher(nc, 5_000);
});
afterAll(async () => {
  publisher.close();
  await nc.close();
  await server.stop();
});

function snapshotOf(streamPath: string): AgentSnapshot {
  const state = foldAgentEvents(initialAgentState(streamPath), [
    { streamPath, offset: 1, createdAt: "2026-12-05T00:00:00.000Z", type: "agent/created", payload: {} },
  ]);
  return { format: SNAPSHOT_FORMAT, streamPath, offset: state.lastFoldedOffset, state, keysIndexed: true };
}

describe("given the snapshot store on the reducer's publisher", () => {
  it("when it saves, the KV client's store loads the same; when the KV client's saves, it loads the same", async () => {
    const ours = await openSnapshotStore(nc, { publisher });
    const theirs = await openSnapshotStore(nc);
    const a = snapshotOf("/agents/snapstore/a");
    const b = snapshotOf("/agents/snapstore/b");
    expect(await ours.saveAgent(a)).toBe(true);
    expect(await theirs.loadAgent(a.streamPath)).toEqual(a);
    expect(await theirs.saveAgent(b)).toBe(true);
    expect(await ours.loadAgent(b.streamPath)).toEqual(b);
    await ours.saveCheckpoint({ format: SNAPSHOT_FORMAT, partition: 3, sequence: 42, pending: [a.streamPath] });
    expect(await theirs.loadCheckpoint(3)).toEqual({ format: SNAPSHOT_FORMAT, partition: 3, sequence: 42, pending: [a.streamPath] });
    expect(await ours.loadCheckpoint(3)).toEqual({ format: SNAPSHOT_FORMAT, partition: 3, sequence: 42, pending: [a.streamPath] });
  });

  it("when there is no entry, or it was deleted or purged, then it loads nothing", async () => {
    const ours = await openSnapshotStore(nc, { publisher });
    expect(await ours.loadAgent("/agents/snapstore/none")).toBeNull();
    expect(await ours.loadCheckpoint(61)).toBeNull();
    const kv = await new Kvm(nc).open(SNAPSHOT_BUCKET);
    const deleted = snapshotOf("/agents/snapstore/deleted");
    const purged = snapshotOf("/agents/snapstore/purged");
    await ours.saveAgent(deleted);
    await ours.saveAgent(purged);
    await kv.delete("agents/agents/snapstore/deleted");
    await kv.purge("agents/agents/snapstore/purged");
    expect(await ours.loadAgent(deleted.streamPath)).toBeNull();
    expect(await ours.loadAgent(purged.streamPath)).toBeNull();
  });

  it("when it loads and saves, then no nats.js request is made", async () => {
    const own = await connect({ servers: server.url });
    const ownPublisher = new JetStreamPublisher(own, 5_000);
    try {
      const ours = await openSnapshotStore(own, { publisher: ownPublisher });
      const requested: string[] = [];
      const original = own.request.bind(own);
      own.request = (subject, ...rest) => {
        requested.push(subject);
        return original(subject, ...rest);
      };
      const c = snapshotOf("/agents/snapstore/c");
      await ours.saveAgent(c);
      expect(await ours.loadAgent(c.streamPath)).toEqual(c);
      await ours.saveCheckpoint({ format: SNAPSHOT_FORMAT, partition: 1, sequence: 7, pending: [] });
      expect((await ours.loadCheckpoint(1))?.sequence).toBe(7);
      expect(requested).toEqual([]);
    } finally {
      ownPublisher.close();
      await own.close();
    }
  });

  it("when a state is larger than a value, then it is not stored, found out from a value's worth of it, however large the state", async () => {
    const ours = await openSnapshotStore(nc, { publisher });
    const base = snapshotOf("/agents/snapstore/large");
    // 6 000 items of 100 kB (one string shared, so the test holds 100 kB): 600 MB of JSON, past
    // V8's longest string, where JSON.stringify held the event loop for seconds and then threw.
    const content = "c".repeat(100_000);
    let itemsRead = 0;
    const items = new Proxy(
      Array.from({ length: 6_000 }, (_, i) => ({ kind: "message", role: "user", content, offset: i })),
      {
        get(target, key, receiver) {
          if (typeof key === "string" && /^\d+$/.test(key)) itemsRead++;
          return Reflect.get(target, key, receiver);
        },
      },
    );
    const large: AgentSnapshot = { ...base, state: { ...base.state, contextItems: items as unknown as AgentSnapshot["state"]["contextItems"] } };
    expect(await ours.saveAgent(large)).toBe(false);
    expect(await ours.loadAgent(large.streamPath)).toBeNull();
    // The server's max payload is 1 MiB here: about eleven items of 100 kB fill it.
    expect(itemsRead).toBeGreaterThan(5);
    expect(itemsRead).toBeLessThan(20);
    // One that fits is stored whole.
    expect(await ours.saveAgent(base)).toBe(true);
    expect(await ours.loadAgent(base.streamPath)).toEqual(base);
  });
});
