// The agent-reducer: holds partition leases and runs a partition worker for each partition it
// owns. A replica that dies loses its leases within the lease TTL; the survivors acquire them,
// resume from the partition's checkpoint, wake the agents that had work pending and rebuild the
// others from their own snapshots when their next event arrives.

import type { EventStore } from "@agentrt/streams";
import { type Metrics, type PartitionBatchSink, type PartitionLeases, startPartitionLeases } from "@agentrt/service-kit";
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "@agentrt/service-kit";
import type { ReactionPolicy } from "@agentrt/agent-core";
import type { ReducerEffects } from "./effects.ts";
import { PartitionWorker, type RetentionPolicy } from "./partition-worker.ts";
import type { SnapshotStore } from "./snapshots.ts";

export interface ReducerServiceOptions {
  readonly id: string;
  readonly nc: NatsConnection;
  readonly store: EventStore;
  readonly snapshots: SnapshotStore;
  readonly effects: ReducerEffects;
  readonly logger: Logger;
  readonly metrics?: Metrics;
  readonly leaseTtlMs: number;
  readonly retention?: Partial<RetentionPolicy>;
  readonly kvReplicas?: number;
  /** The reaction policy (production's by default; main.ts builds it from the worker switch). */
  readonly policy?: ReactionPolicy;
  /** Quiet time before an agent's outstanding work is issued again. */
  readonly redriveAfterMs?: number;
  /**
   * Is handed every batch of the partitions this replica owns, as its workers receive them: the
   * stream cache of the llm-driver in this process (REDUCER_LLM_DRIVER=in-process).
   */
  readonly partitionBatches?: PartitionBatchSink;
}

export class ReducerService {
  private readonly workers = new Map<number, PartitionWorker>();
  private leases: PartitionLeases | undefined;
  private stopped = false;
  private readonly leaseChanges;
  private readonly eventsFolded;
  private readonly retentionEvents;

  constructor(private readonly options: ReducerServiceOptions) {
    this.leaseChanges = options.metrics?.counter("agentrt_reducer_lease_changes_total", "Partition leases acquired or lost", ["change"]);
    this.eventsFolded = options.metrics?.counter("agentrt_reducer_events_folded_total", "Events folded by this replica");
    this.retentionEvents = options.metrics?.counter("agentrt_reducer_retention_total", "Agent snapshots written, agents evicted and rebuilt, partition checkpoints written", ["what"]);
    options.metrics?.gauge("agentrt_reducer_resident_agents", "Agents held in memory by this replica", [], () =>
      [...this.workers.values()].reduce((sum, w) => sum + w.residentAgents, 0),
    );
  }

  /** Agents held in memory across the partitions this replica owns. */
  residentAgents(): number {
    return [...this.workers.values()].reduce((sum, w) => sum + w.residentAgents, 0);
  }

  /** Competing for partition leases (readiness): started and not stopping. */
  running(): boolean {
    return this.leases !== undefined && !this.stopped;
  }

  ownedPartitions(): number[] {
    return [...this.workers.keys()].sort((a, b) => a - b);
  }

  async start(): Promise<void> {
    const { options } = this;
    this.leases = await startPartitionLeases({
      nc: options.nc,
      group: "reducer",
      owner: options.id,
      partitionCount: options.store.partitionCount,
      ttlMs: options.leaseTtlMs,
      replicas: options.kvReplicas,
      logger: options.logger,
      onAcquired: async (partition) => {
        this.leaseChanges?.inc({ change: "acquired" });
        const worker = new PartitionWorker({
          partition,
          store: options.store,
          snapshots: options.snapshots,
          effects: options.effects,
          logger: options.logger.child({ partition }),
          ...(options.retention ? { retention: options.retention } : {}),
          ...(options.policy ? { policy: options.policy } : {}),
          ...(options.redriveAfterMs === undefined ? {} : { redriveAfterMs: options.redriveAfterMs }),
          onEvents: (count) => this.eventsFolded?.inc(count),
          ...(options.partitionBatches === undefined ? {} : { batchSink: options.partitionBatches }),
          onRetention: (what) => this.retentionEvents?.inc({ what }),
        });
        this.workers.set(partition, worker);
        await worker.start();
      },
      onLost: async (partition) => {
        this.leaseChanges?.inc({ change: "lost" });
        const worker = this.workers.get(partition);
        this.workers.delete(partition);
        await worker?.stop();
      },
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // Snapshot what we own so the next owner starts close to the head, then hand leases back.
    for (const worker of this.workers.values()) await worker.checkpointNow().catch(() => 0);
    await this.leases?.stop({ release: true });
    for (const worker of this.workers.values()) await worker.stop();
    this.workers.clear();
  }
}
