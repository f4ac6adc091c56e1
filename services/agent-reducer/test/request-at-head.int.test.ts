// The reducer appends its decisions at the head with `keysNewAtHead`: the request's key
// reservation travels with the publish instead of before it. On a real nats-server with the
// reducer's real effects: an earlier attempt at the same request that lost its offset (another
// replica's, whose view was behind) leaves a reservation naming a record without the key; the
// reducer's request still lands exactly once, and the key stays unique for every later writer.

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { AgentRuntimeError, CONTRACT_VERSION, eventInput, idempotencyKeys } from "@agentrt/contract";
import { JetStreamEventStore, JetStreamPublisher } from "@agentrt/streams/jetstream";
import { createLogger, ensureWorkStreams } from "@agentrt/service-kit";
import { type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsReducerEffects } from "../src/effects.ts";
import { PartitionWorker } from "../src/partition-worker.ts";
import { openSnapshotStore } from "../src/snapshots.ts";
import { createBareAgent, say } from "../../../test/support/turns.ts";

const logger = createLogger("test", "silent");
const DEBOUNCE_MS = 1_500;
let server: NatsServer;
const connections: NatsConnection[] = [];
const stores: JetStreamEventStore[] = [];
const workers: PartitionWorker[] = [];

async function openStore(): Promise<{ nc: NatsConnection; store: JetStreamEventStore }> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const store = await JetStreamEventStore.open(nc, { partitionCount: 4 });
  stores.push(store);
  return { nc, store };
}

let store: JetStreamEventStore;

beforeAll(async () => {
  server = await startNatsServer();
  const opened = await openStore();
  store = opened.store;
  const reducer = await openStore();
  await ensureWorkStreams(await jetstreamManager(reducer.nc));
  const snapshots = await openSnapshotStore(reducer.nc);
  const effects = natsReducerEffects({ store: reducer.store, nc: reducer.nc, workPublisher: new JetStreamPublisher(reducer.nc, 5_000), logger, interruptTimeoutMs: 200 });
  for (let partition = 0; partition < reducer.store.partitionCount; partition += 1) {
    const worker = new PartitionWorker({ partition, store: reducer.store, snapshots, effects, logger });
    workers.push(worker);
    await worker.start();
  }
});

afterAll(async () => {
  for (const w of workers) await w.stop();
  for (const s of stores) await s.close();
  for (const nc of connections) await nc.close();
  await server?.stop();
});

describe("a request appended at the head with its key reserved alongside", () => {
  it("lands once after another replica's attempt lost its offset, and its key stays unique", async () => {
    const path = "/agents/at-head/lost-attempt";
    await createBareAgent(store, path, DEBOUNCE_MS);
    const trigger = await say(store, path, "hello");
    // Another replica, whose view ends at the trigger, decides the request while a note that
    // triggers nothing lands first: it loses the offset (a conflict) after reserving the key.
    const { store: lagging } = await openStore();
    await lagging.read(path);
    const note = await store.append(path, [{ type: "agents/context-added", payload: { role: "system", content: "a note that triggers nothing" } }]);
    const requestAt = (offset: number) =>
      eventInput("agent/llm-request-requested", { model: "openai/gpt-5.6-terra", expiresAt: new Date(Date.now() + 600_000).toISOString(), contractVersion: CONTRACT_VERSION }, idempotencyKeys.request(offset));
    const lost = await lagging.append(path, [requestAt(trigger.offset)], { expectedLastOffset: trigger.offset, keysNewAtHead: true }).catch((error: unknown) => error);
    expect(lost).toBeInstanceOf(AgentRuntimeError);
    expect((lost as AgentRuntimeError).code).toBe("conflict");

    // The reducer decides at its head (after the note) once the debounce has passed.
    const requestOffset = (note.events[0]?.offset ?? 0) + 1;
    await waitFor(async () => (await store.read(path)).some((e) => e.type === "agent/llm-request-requested"), { timeoutMs: 15_000 });
    const requests = (await store.read(path)).filter((e) => e.type === "agent/llm-request-requested");
    expect(requests.map((e) => [e.offset, e.idempotencyKey])).toEqual([[requestOffset, idempotencyKeys.request(trigger.offset)]]);
    // Any writer appending the key again finds the reducer's request: the reservation names it.
    const again = await lagging.append(path, [requestAt(trigger.offset)]);
    expect(again.status).toBe("duplicate");
    expect(again.events.map((e) => e.offset)).toEqual([requestOffset]);
  });
});
