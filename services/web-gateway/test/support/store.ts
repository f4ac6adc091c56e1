// The event store the gateway's integration tests run against: the JetStream store on the
// harness's own nats-server (one per test file).
import { type EventStore } from "@agentrt/streams";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { connectNats, type NatsConnection } from "@agentrt/service-kit";
import { startNatsServer, type NatsServer } from "@agentrt/testing";

export interface TestStore {
  readonly store: EventStore;
  readonly nats: NatsServer;
  readonly nc: NatsConnection;
  close(): Promise<void>;
}

export async function openTestStore(): Promise<TestStore> {
  const nats = await startNatsServer();
  const nc = await connectNats({ url: nats.url, name: "web-gateway-test" });
  const store = await JetStreamEventStore.open(nc);
  return {
    store,
    nats,
    nc,
    close: async () => {
      await store.close();
      await nc.drain();
      await nats.stop();
    },
  };
}
