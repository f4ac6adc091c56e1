// Follows one partition's feed while this replica holds its lease: restores the partition
// snapshot, folds every later batch into per-stream processors, and writes a new snapshot
// every N events once all reactions up to that point have been appended. It also follows the
// partition's live lane, so streaming replies get their prose and script previews.

import type { EventStore, FeedBatch, FeedSubscription, LiveFeed } from "@agentrt/streams";
import type { Logger } from "@agentrt/service-kit";
import type { ProjectWorkerOptions } from "./core-adapter.ts";
import type { ReducerEffects } from "./effects.ts";
import { SNAPSHOT_FORMAT, type SnapshotStore } from "./snapshots.ts";
import { StreamProcessor } from "./stream-processor.ts";

export interface PartitionWorkerOptions {
  readonly partition: number;
  readonly store: EventStore;
  readonly snapshots: SnapshotStore;
  readonly effects: ReducerEffects;
  readonly logger: Logger;
  readonly snapshotEveryEvents: number;
  readonly projectWorker?: ProjectWorkerOptions;
  readonly onEvents?: (count: number) => void;
}

export class PartitionWorker {
  private readonly processors = new Map<string, StreamProcessor>();
  private feed: FeedSubscription | undefined;
  private loop: Promise<void> | undefined;
  private live: LiveFeed | undefined;
  private liveLoop: Promise<void> | undefined;
  private sequence = 0;
  private snapshotSequence = 0;
  private eventsSinceSnapshot = 0;
  private stopped = false;

  constructor(private readonly options: PartitionWorkerOptions) {}

  get partition(): number {
    return this.options.partition;
  }

  processor(streamPath: string): StreamProcessor | undefined {
    return this.processors.get(streamPath);
  }

  async start(): Promise<void> {
    const { partition, store, snapshots, logger } = this.options;
    const snapshot = await snapshots.load(partition).catch((error: unknown) => {
      logger.warn({ err: error, partition }, "snapshot unreadable; replaying the partition");
      return null;
    });
    if (snapshot) {
      for (const state of snapshot.streams) {
        this.processors.set(state.streamPath, this.newProcessor(state.streamPath, state));
      }
      this.sequence = this.snapshotSequence = snapshot.sequence;
      logger.info({ partition, sequence: snapshot.sequence, streams: snapshot.streams.length }, "restored partition snapshot");
      // Timers and hand-offs are re-armed from state.
      for (const processor of this.processors.values()) processor.scheduleFlush();
    }
    this.feed = store.feed({ partitions: [partition], afterSequence: this.sequence });
    this.loop = this.follow(this.feed);
    this.live = store.liveFeed({ partitions: [partition] });
    this.liveLoop = this.followLive(this.live);
  }

  /** Hands live-lane chunks to their stream's processor (streams not yet folded have none). */
  private async followLive(live: LiveFeed): Promise<void> {
    try {
      for await (const event of live) {
        if (this.stopped) return;
        this.processors.get(event.streamPath)?.applyLive(event);
      }
    } catch (error) {
      // Core NATS subscriptions survive reconnects; this ends only with the store.
      if (!this.stopped) this.options.logger.warn({ err: error, partition: this.partition }, "live lane feed ended; replies of this partition get no previews");
    }
  }

  private newProcessor(streamPath: string, restored?: ConstructorParameters<typeof StreamProcessor>[3]): StreamProcessor {
    return new StreamProcessor(streamPath, this.options.effects, this.options.logger.child({ streamPath }), restored, this.options.projectWorker);
  }

  /**
   * Folds the feed until stopped. A feed that fails (NATS failover, a timeout) is followed
   * again from the last folded sequence after a backoff: a worker that holds the lease must
   * never go silent while it keeps renewing it.
   */
  private async follow(first: FeedSubscription): Promise<void> {
    let feed = first;
    let failures = 0;
    while (!this.stopped) {
      try {
        for await (const batch of feed) {
          if (this.stopped) break;
          failures = 0;
          this.fold(batch.streamPath, batch.events);
          this.sequence = batch.sequence;
          this.eventsSinceSnapshot += batch.events.length;
          this.options.onEvents?.(batch.events.length);
          if (this.eventsSinceSnapshot >= this.options.snapshotEveryEvents) void this.snapshot();
        }
        if (this.stopped) return;
        this.options.logger.warn({ partition: this.partition }, "partition feed ended; following it again");
      } catch (error) {
        if (this.stopped) return;
        this.options.logger.warn({ err: error, partition: this.partition, sequence: this.sequence }, "partition feed failed; following it again");
      }
      await feed.close().catch(() => undefined);
      failures += 1;
      await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 100 * 2 ** Math.min(failures, 6))));
      if (this.stopped) return;
      feed = this.options.store.feed({ partitions: [this.partition], afterSequence: this.sequence });
      this.feed = feed;
    }
  }

  private fold(streamPath: string, events: FeedBatch["events"]): void {
    let processor = this.processors.get(streamPath);
    if (!processor) {
      processor = this.newProcessor(streamPath);
      this.processors.set(streamPath, processor);
    }
    for (const event of events) processor.apply(event);
  }

  /** Writes a snapshot when every processor's reactions have been appended. */
  async snapshot(): Promise<boolean> {
    const sequence = this.sequence;
    if (sequence === this.snapshotSequence) return false;
    await Promise.all([...this.processors.values()].map((p) => p.settle()));
    if (![...this.processors.values()].every((p) => p.isIdle()) || sequence !== this.sequence) return false;
    this.eventsSinceSnapshot = 0;
    await this.options.snapshots.save({
      format: SNAPSHOT_FORMAT,
      partition: this.partition,
      sequence,
      streams: [...this.processors.values()].map((p) => p.state),
    });
    this.snapshotSequence = sequence;
    return true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const processor of this.processors.values()) processor.close();
    await this.feed?.close();
    await this.live?.close();
    await this.loop?.catch(() => undefined);
    await this.liveLoop;
  }
}
