// Subscribing at the head (fromOffset = lastOffset + 1, an offset that does not exist yet)
// while a writer appends must still deliver every later offset: the gateway's live fan-out
// opens its shared subscription exactly that way after a restart.

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";

let server: NatsServer;
let nc: NatsConnection;
let writerNc: NatsConnection;
let store: JetStreamEventStore;
/** The writer is another process in real life: its own connection and store. */
let writerStore: JetStreamEventStore;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  writerNc = await connect({ servers: server.url });
  store = await JetStreamEventStore.open(nc, { partitionCount: 4 });
  writerStore = await JetStreamEventStore.open(writerNc, { partitionCount: 4 });
});
afterAll(async () => {
  await store.close();
  await writerStore.close();
  await nc.close();
  await writerNc.close();
  await server.stop();
});

describe.each([false, true])("subscribe at the head (ephemeral lane %s)", (ephemeral) => {
  it("misses nothing appended while the subscription starts", async () => {
    const path = `/agents/head/${ephemeral ? "eph" : "durable"}`;
    await writerStore.append(path, [{ type: "agent/created", payload: {} }]);
    let writing = true;
    const writer = (async () => {
      while (writing) {
        await writerStore.append(path, [{ type: "agent/summary-updated", payload: { activity: "tick" } }]);
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const failures: string[] = [];
    for (let round = 0; round < 40; round += 1) {
      const last = await store.lastOffset(path);
      const subscription = store.subscribe(path, { fromOffset: last + 1, ephemeral });
      const got: number[] = [];
      const reading = (async () => {
        for await (const event of subscription) {
          if (event.ephemeral) continue;
          got.push(event.offset);
          if (got.length === 5) break;
        }
      })();
      await waitFor(() => got.length === 5, { timeoutMs: 10_000 });
      await subscription.close();
      await reading;
      const want = [last + 1, last + 2, last + 3, last + 4, last + 5];
      if (JSON.stringify(got) !== JSON.stringify(want)) failures.push(`round ${round}: from ${last + 1} got ${JSON.stringify(got)}`);
    }
    writing = false;
    await writer;
    expect(failures).toEqual([]);
  });
});
