// @agentrt/streams: the event store port and the memory store (for pure unit tests). The
// JetStream adapter is the `@agentrt/streams/jetstream` subpath.
export * from "./event-store.ts";
export { MemoryEventStore, type MemoryEventStoreOptions } from "./memory-store.ts";
export { fnv1a32, partitionOfPath } from "./partition.ts";
export { AsyncQueue } from "./async-queue.ts";
export { assertEventSizes, jsonBytes } from "./batch.ts";
export { ForeignEventTypeError, ownedStore, type OwnedStoreOptions } from "./owned-store.ts";
export {
  DEFAULT_STREAM_QUOTA,
  DEFAULT_TENANT_QUOTA,
  type LedgerEntry,
  MemoryUsageLedger,
  quotaStore,
  StreamQuota,
  type StreamQuotaLimits,
  type StreamQuotaOptions,
  type StreamUsage,
  type TenantLedgerEntry,
  tenantOf,
  type TenantQuotaLimits,
  type TenantUsage,
  type UsageLedger,
} from "./stream-quota.ts";
