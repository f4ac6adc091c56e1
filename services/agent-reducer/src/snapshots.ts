// Partition snapshots: the folded state of every agent in a partition at a feed sequence, so
// a replica that takes a partition over resumes from there instead of replaying every stream
// from offset 1. Stored in the NATS object store (states can exceed a KV value).
//
// A snapshot is written only when every reaction up to its sequence has been appended, so the
// events it covers never need reacting to again.

import { Objm, type ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/nats-core";
import type { AgentState } from "@agentrt/agent-core";

export const SNAPSHOT_FORMAT = 1;

export interface PartitionSnapshot {
  readonly format: typeof SNAPSHOT_FORMAT;
  readonly partition: number;
  readonly sequence: number;
  readonly streams: readonly AgentState[];
}

export interface SnapshotStore {
  load(partition: number): Promise<PartitionSnapshot | null>;
  save(snapshot: PartitionSnapshot): Promise<void>;
}

export async function openSnapshotStore(nc: NatsConnection, options: { bucket?: string; replicas?: number } = {}): Promise<SnapshotStore> {
  const objm = new Objm(nc);
  const bucket: ObjectStore = await objm.create(options.bucket ?? "agentrt_snapshots", { replicas: options.replicas ?? 1 });
  const name = (partition: number) => `reducer-partition-${partition}.json`;
  return {
    async load(partition) {
      const text = await bucket.getBlob(name(partition)).catch(() => null);
      if (!text) return null;
      try {
        const parsed = JSON.parse(new TextDecoder().decode(text)) as PartitionSnapshot;
        // A snapshot from another format version is ignored: replaying is always correct.
        return parsed.format === SNAPSHOT_FORMAT && parsed.partition === partition ? parsed : null;
      } catch {
        return null;
      }
    },
    async save(snapshot) {
      await bucket.putBlob({ name: name(snapshot.partition) }, new TextEncoder().encode(JSON.stringify(snapshot)));
    },
  };
}

/** An in-process snapshot store, for tests that run the reducer on the memory event store. */
export function memorySnapshotStore(): SnapshotStore & { saved: Map<number, PartitionSnapshot> } {
  const saved = new Map<number, PartitionSnapshot>();
  return {
    saved,
    load: async (partition) => saved.get(partition) ?? null,
    save: async (snapshot) => {
      saved.set(snapshot.partition, structuredClone(snapshot));
    },
  };
}
