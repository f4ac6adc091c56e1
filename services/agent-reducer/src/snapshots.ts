// Snapshots, per agent: the folded state of ONE agent at a stream offset, so an agent evicted
// from memory, or taken over by another replica, is rebuilt from its own snapshot plus the
// events after it, never from the whole partition. A partition keeps only a checkpoint: the
// feed position up to which every event's reactions have been appended, and which agents had
// work pending then (a timer, an open request, a running script), so a successor wakes
// exactly those at once and everything else lazily, on its next event.
//
// Both live in one NATS KV bucket (a value is at most the server's max payload; an agent whose
// state is larger is simply not snapshotted and is rebuilt from its stream, which is always
// correct). A value of another format version is ignored: rebuilding from events is always
// correct, so a format change needs no migration.

import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { createShared, DirectGets, type JetStreamPublisher } from "@agentrt/streams/jetstream";
import type { AgentState } from "@agentrt/agent-core";
import { jsonWithin } from "@agentrt/service-kit";

/** Bump when AgentState or this envelope changes shape: older snapshots are then rebuilt from events. */
export const SNAPSHOT_FORMAT = 2;

export interface AgentSnapshot {
  readonly format: typeof SNAPSHOT_FORMAT;
  readonly streamPath: string;
  /** The stream offset the state covers (its lastFoldedOffset). */
  readonly offset: number;
  readonly state: AgentState;
  /**
   * The store's key index holds every key of the stream (`AppendHint.keysIndexed`): a rebuilt
   * agent's first append then needs no look-up to know it. Absent in older snapshots.
   */
  readonly keysIndexed?: boolean;
}

export interface PartitionCheckpoint {
  readonly format: typeof SNAPSHOT_FORMAT;
  readonly partition: number;
  /** Every batch of the feed up to here has been folded and reacted to. */
  readonly sequence: number;
  /** Agents with work pending at the checkpoint: a successor rebuilds these at once. */
  readonly pending: readonly string[];
}

export interface SnapshotStore {
  loadAgent(streamPath: string): Promise<AgentSnapshot | null>;
  /** False when the snapshot could not be stored (too large): the agent is rebuilt from events. */
  saveAgent(snapshot: AgentSnapshot): Promise<boolean>;
  loadCheckpoint(partition: number): Promise<PartitionCheckpoint | null>;
  saveCheckpoint(checkpoint: PartitionCheckpoint): Promise<void>;
}

export const SNAPSHOT_BUCKET = "agentrt_agent_snapshots";

const agentKey = (streamPath: string) => `agents${streamPath}`;
const checkpointKey = (partition: number) => `partition.${partition}`;

function parseAgent(bytes: Uint8Array, streamPath: string): AgentSnapshot | null {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as Partial<AgentSnapshot>;
    const ok = parsed.format === SNAPSHOT_FORMAT && parsed.streamPath === streamPath && typeof parsed.offset === "number" && parsed.state?.lastFoldedOffset === parsed.offset && (parsed.keysIndexed === undefined || typeof parsed.keysIndexed === "boolean");
    return ok ? (parsed as AgentSnapshot) : null;
  } catch {
    return null;
  }
}

function parseCheckpoint(bytes: Uint8Array, partition: number): PartitionCheckpoint | null {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as Partial<PartitionCheckpoint>;
    const ok = parsed.format === SNAPSHOT_FORMAT && parsed.partition === partition && typeof parsed.sequence === "number" && Array.isArray(parsed.pending);
    return ok ? (parsed as PartitionCheckpoint) : null;
  } catch {
    return null;
  }
}

/**
 * The snapshot bucket. With the reducer's `publisher`, snapshots are written and (when the bucket
 * allows direct gets) read on its inbox, as the event store's records are, instead of a nats.js
 * request each; the bytes and subjects are the KV client's.
 */
export async function openSnapshotStore(nc: NatsConnection, options: { bucket?: string; replicas?: number; publisher?: JetStreamPublisher } = {}): Promise<SnapshotStore> {
  const bucket = options.bucket ?? SNAPSHOT_BUCKET;
  const kv: KV = await createShared(() => new Kvm(nc).create(bucket, { history: 1, replicas: options.replicas ?? 1 }));
  const maxBytes = Math.max(1024, nc.info?.max_payload ?? 1_048_576) - 4096;
  const publisher = options.publisher;
  const direct = publisher !== undefined && (await kv.status()).streamInfo.config.allow_direct === true ? new DirectGets(publisher.requests) : undefined;
  const read = async (key: string): Promise<Uint8Array | null> => {
    if (direct === undefined) {
      const entry = await kv.get(key);
      return entry === null || entry.operation !== "PUT" ? null : entry.value;
    }
    const entry = await direct.kvEntry(bucket, key);
    return entry === null || entry.operation !== "PUT" ? null : entry.value;
  };
  const write = async (key: string, bytes: Uint8Array): Promise<void> => {
    if (publisher === undefined) await kv.put(key, bytes);
    else await publisher.publish(`$KV.${bucket}.${key}`, bytes);
  };
  return {
    async loadAgent(streamPath) {
      const value = await read(agentKey(streamPath));
      return value === null ? null : parseAgent(value, streamPath);
    },
    async saveAgent(snapshot) {
      // Written only up to a value's size: learning that a large agent's state does not fit
      // costs that much JSON, never the whole state (which held the event loop of every agent
      // of the process, and past V8's longest string threw on every try).
      const text = jsonWithin(snapshot, maxBytes);
      if (text === undefined) return false;
      const bytes = new TextEncoder().encode(text);
      await write(agentKey(snapshot.streamPath), bytes);
      return true;
    },
    async loadCheckpoint(partition) {
      const value = await read(checkpointKey(partition));
      return value === null ? null : parseCheckpoint(value, partition);
    },
    async saveCheckpoint(checkpoint) {
      await write(checkpointKey(checkpoint.partition), new TextEncoder().encode(JSON.stringify(checkpoint)));
    },
  };
}

/** An in-process snapshot store (JSON round trip, like the real one), for tests on the memory event store. */
export function memorySnapshotStore(): SnapshotStore & { agents: Map<string, string>; checkpoints: Map<number, string> } {
  const agents = new Map<string, string>();
  const checkpoints = new Map<number, string>();
  const bytes = (text: string) => new TextEncoder().encode(text);
  return {
    agents,
    checkpoints,
    loadAgent: async (path) => {
      const text = agents.get(path);
      return text === undefined ? null : parseAgent(bytes(text), path);
    },
    saveAgent: async (snapshot) => {
      agents.set(snapshot.streamPath, JSON.stringify(snapshot));
      return true;
    },
    loadCheckpoint: async (partition) => {
      const text = checkpoints.get(partition);
      return text === undefined ? null : parseCheckpoint(bytes(text), partition);
    },
    saveCheckpoint: async (checkpoint) => {
      checkpoints.set(checkpoint.partition, JSON.stringify(checkpoint));
    },
  };
}
