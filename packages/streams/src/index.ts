// @agentrt/streams: the event store port and its adapters (JetStream for services, memory
// for pure unit tests).
export * from "./event-store.ts";
export { MemoryEventStore, type MemoryEventStoreOptions } from "./memory-store.ts";
export { fnv1a32, partitionOfPath } from "./partition.ts";
export { AsyncQueue } from "./async-queue.ts";
export { JetStreamEventStore, type JetStreamEventStoreOptions } from "./jetstream/store.ts";
export { assertEventSizes, jsonBytes } from "./batch.ts";
export { ForeignEventTypeError, ownedStore, type OwnedStoreOptions } from "./owned-store.ts";
