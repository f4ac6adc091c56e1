// For the tests that look at the key index's entries: one nats-server, a store that creates the
// events' stream, and the index opened beside it. Connections and stores made through the
// fixture are closed with it.

import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { jetstream } from "@nats-io/jetstream";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { JetStreamEventStore, type JetStreamEventStoreOptions } from "../src/jetstream/index.ts";
import { KeyIndex } from "../src/jetstream/key-index.ts";
import { JetStreamPublisher } from "../src/jetstream/publisher.ts";

export interface KeyIndexFixture {
  readonly server: NatsServer;
  /** The index of the fixture's stream (`<streamName>_KEYS`), on its own connection. */
  readonly index: KeyIndex;
  /** A new connection to the server. */
  connect(): Promise<NatsConnection>;
  /** A store with the fixture's names on `nc` (any object standing in for a connection), or on a new connection. */
  openStore(nc?: NatsConnection, options?: JetStreamEventStoreOptions): Promise<JetStreamEventStore>;
  stop(): Promise<void>;
}

export async function startKeyIndexFixture(names: JetStreamEventStoreOptions & { readonly streamName: string }): Promise<KeyIndexFixture> {
  const server = await startNatsServer();
  const connections: NatsConnection[] = [];
  const stores: JetStreamEventStore[] = [];
  const newConnection = async () => {
    const nc = await connect({ servers: server.url });
    connections.push(nc);
    return nc;
  };
  const openStore = async (nc?: NatsConnection, options: JetStreamEventStoreOptions = {}) => {
    const store = await JetStreamEventStore.open(nc ?? (await newConnection()), { ...names, ...options });
    stores.push(store);
    return store;
  };
  const nc = await newConnection();
  await openStore(nc);
  const publisher = new JetStreamPublisher(nc, 5_000);
  const index = await KeyIndex.open(jetstream(nc), publisher, `${names.streamName}_KEYS`, 1);
  return {
    server,
    index,
    connect: newConnection,
    openStore,
    async stop() {
      publisher.close();
      for (const store of stores) await store.close();
      for (const connection of connections) await connection.close();
      await server.stop();
    },
  };
}
