// The event store the gateway's integration tests run against.
import { MemoryEventStore, type EventStore } from "@agentrt/streams";

export interface TestStore {
  readonly store: EventStore;
  close(): Promise<void>;
}

export async function openTestStore(): Promise<TestStore> {
  const store = new MemoryEventStore();
  return { store, close: () => store.close() };
}
