// How a service opens the event store: on JetStream, wrapped so that it refuses appends of
// event types the service does not emit (contract SERVICE_EMITS), each refusal reported once.

import type { NatsConnection } from "@nats-io/nats-core";
import { type OwnedStoreOptions, ownedStore } from "../owned-store.ts";
import { JetStreamEventStore, type JetStreamEventStoreOptions } from "./store.ts";

export async function openServiceStore(nc: NatsConnection, options: JetStreamEventStoreOptions & OwnedStoreOptions): Promise<JetStreamEventStore> {
  const { service, onRefused, ...storeOptions } = options;
  return ownedStore(await JetStreamEventStore.open(nc, storeOptions), { service, ...(onRefused ? { onRefused } : {}) });
}
