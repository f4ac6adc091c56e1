// Follows one partition's feed while this replica holds its lease, folding every batch into
// the processor of its agent. Memory is bounded by activity, not by every agent ever seen:
// an agent is held only while it has something pending or was active recently; an idle one is
// snapshotted on its own and evicted, and rebuilt from that snapshot plus the events after it
// when its next event arrives. The partition itself keeps only a checkpoint: the feed position
// up to which every reaction has been appended, and the agents that had work pending, which a
// successor wakes at takeover (everything else wakes lazily). So takeover costs time in
// proportion to the active agents, and snapshots are taken under continuous traffic. An agent
// being brought in holds up only its own batches: the feed goes on with the others.
// The worker also follows the partition's live lane for reply previews.

import { type EventStore, type FeedBatch, type FeedSubscription, type LiveFeed, offsetsOfBatch } from "@agentrt/streams";
import type { Logger, PartitionBatchSink } from "@agentrt/service-kit";
import type { ReactionPolicy } from "@agentrt/agent-core";
import type { ReducerEffects } from "./effects.ts";
import { SNAPSHOT_FORMAT, type SnapshotStore } from "./snapshots.ts";
import { StreamProcessor } from "./stream-processor.ts";

export interface RetentionPolicy {
  /** Snapshot a changed agent once it has been quiet this long. */
  readonly snapshotIdleMs: number;
  /** …or once this many events were folded since its last snapshot (at its next quiet moment). */
  readonly snapshotEveryEvents: number;
  /** Evict an agent with nothing pending after this long without activity. */
  readonly evictIdleMs: number;
  /** How often snapshots and evictions are looked after (and the checkpoint with them). */
  readonly maintainEveryMs: number;
  /**
   * How often the checkpoint is written when it moved. A replica that takes a crashed one's
   * partition replays the feed from it, and every agent in that replay is brought in (a
   * snapshot read and a tail read) before its batches fold: under load, a checkpoint a second
   * old was 2 500 batches to replay and held a killed one-process reducer's turns up by 0.4 s.
   */
  readonly checkpointEveryMs: number;
}

/** A pending agent whose rebuild failed is tried again after this, doubling up to the max. */
const WAKE_RETRY_FIRST_MS = 200;
const WAKE_RETRY_MAX_MS = 5_000;
/** How many pending agents a takeover rebuilds at once. */
const TAKEOVER_CONCURRENCY = 16;
/** How many agents may have batches set aside while they are brought in; past that the feed waits for one. */
const MAX_AGENTS_BROUGHT_IN = 64;
/** Events an agent's rebuild folds before it lets the event loop turn. */
const REBUILD_SLICE_EVENTS = 1_000;

export const DEFAULT_RETENTION: RetentionPolicy = { snapshotIdleMs: 1_000, snapshotEveryEvents: 2_000, evictIdleMs: 30_000, maintainEveryMs: 1_000, checkpointEveryMs: 200 };

export interface PartitionWorkerOptions {
  readonly partition: number;
  readonly store: EventStore;
  readonly snapshots: SnapshotStore;
  readonly effects: ReducerEffects;
  readonly logger: Logger;
  readonly retention?: Partial<RetentionPolicy>;
  /** The reaction policy (production's by default; main.ts builds it from the worker switch). */
  readonly policy?: ReactionPolicy;
  /** Quiet time before an agent's outstanding work is issued again (`REDUCER_REDRIVE_AFTER_MS`). */
  readonly redriveAfterMs?: number;
  readonly onEvents?: (count: number) => void;
  /** Is handed every batch of the partition's feed as it arrives (the in-process driver's stream cache). */
  readonly batchSink?: PartitionBatchSink;
  readonly onRetention?: (what: "snapshot" | "evicted" | "rebuilt" | "checkpoint") => void;
}

export class PartitionWorker {
  private readonly processors = new Map<string, StreamProcessor>();
  /** Per agent, the feed sequence of its oldest batch not yet fully reacted to. */
  private readonly unreacted = new Map<string, number>();
  /** Agents being brought into memory right now (never evicted mid-rebuild). */
  private readonly loading = new Set<string>();
  private readonly rebuilding = new Map<string, Promise<StreamProcessor>>();
  /**
   * Per agent being brought into memory, the feed's batches for it, in order, set aside until it
   * is in; the feed goes on with every other agent meanwhile (a rebuild is a snapshot read and
   * maybe a tail read: after a takeover, a dozen pending agents' rebuilds held up every new
   * message of their partition). An agent in here is never evicted, and the checkpoint stays
   * before its first batch.
   */
  private readonly setAside = new Map<string, FeedBatch[]>();
  /** Per agent in `setAside`: its batches folded once it is in memory. */
  private readonly bringingIn = new Map<string, Promise<void>>();
  /** The checkpoint's pending agents not rebuilt yet: kept pending in the next checkpoint. */
  private readonly takeoverPending = new Set<string>();
  private waking: Promise<void> | undefined;
  private lastPending = "";
  private readonly retention: RetentionPolicy;
  private feed: FeedSubscription | undefined;
  private loop: Promise<void> | undefined;
  private live: LiveFeed | undefined;
  private liveLoop: Promise<void> | undefined;
  private maintainTimer: NodeJS.Timeout | undefined;
  private checkpointTimer: NodeJS.Timeout | undefined;
  /** The last checkpoint write queued or in flight: one at a time, so an older one never lands after a newer. */
  private checkpointing: Promise<void> | undefined;
  private maintaining: Promise<void> | undefined;
  private sequence = 0;
  private checkpointSequence = 0;
  private stopped = false;

  constructor(private readonly options: PartitionWorkerOptions) {
    this.retention = { ...DEFAULT_RETENTION, ...options.retention };
  }

  get partition(): number {
    return this.options.partition;
  }

  /** The agent's processor while it is held in memory. */
  processor(streamPath: string): StreamProcessor | undefined {
    return this.processors.get(streamPath);
  }

  /** How many agents are held in memory. */
  get residentAgents(): number {
    return this.processors.size;
  }

  async start(): Promise<void> {
    const { partition, snapshots, logger } = this.options;
    const checkpoint = await snapshots.loadCheckpoint(partition).catch((error: unknown) => {
      logger.warn({ err: error, partition }, "partition checkpoint unreadable; replaying the partition");
      return null;
    });
    if (checkpoint) {
      // Agents with a timer, an open request or a running script are woken now (their timers
      // and hand-offs re-armed from state); every other agent waits for its next event.
      // The feed starts at once; the agents with work pending are rebuilt meanwhile, a few at
      // a time (each a snapshot read and a tail read, mostly waiting). A batch of an agent
      // still being rebuilt waits for that agent only.
      this.sequence = this.checkpointSequence = checkpoint.sequence;
      for (const path of checkpoint.pending) this.takeoverPending.add(path);
      this.waking = this.wakePending([...checkpoint.pending]);
      logger.info({ partition, sequence: checkpoint.sequence, pending: checkpoint.pending.length }, "following the partition from its checkpoint");
    }
    this.options.batchSink?.followPartition(partition);
    this.feed = this.options.store.feed({ partitions: [partition], afterSequence: this.sequence });
    this.loop = this.follow(this.feed);
    // Reply chunks are all it previews: the rest of the lane (its own runtime changes and
    // previews among them) is not even parsed.
    this.live = this.options.store.liveFeed({ partitions: [partition], types: ["agent/llm-response-chunks"] });
    this.liveLoop = this.followLive(this.live);
    this.maintainTimer = setInterval(() => void this.maintain(), this.retention.maintainEveryMs);
    this.maintainTimer.unref();
    this.checkpointTimer = setInterval(() => this.checkpointSoon(), this.retention.checkpointEveryMs);
    this.checkpointTimer.unref();
  }

  private async wakePending(queue: string[]): Promise<void> {
    const started = this.options.effects.now();
    const count = queue.length;
    await Promise.all(
      Array.from({ length: Math.min(TAKEOVER_CONCURRENCY, queue.length) }, async () => {
        for (let path = queue.shift(); path !== undefined && !this.stopped; path = queue.shift()) await this.wakeUntilDone(path);
      }),
    ).catch((error: unknown) => this.options.logger.error({ err: error, partition: this.partition }, "could not wake an agent with pending work; it wakes on its next event"));
    this.options.logger.info({ partition: this.partition, pending: count, tookMs: this.options.effects.now() - started }, "resumed the partition from its checkpoint");
  }

  /**
   * Rebuilds an agent with work pending and lets it act, trying again until it works or the
   * worker stops: a takeover often runs while NATS elects leaders, and an agent waiting for its
   * request must not wait for an event that may never come (the NATS-leader chaos test saw four
   * agents stay unanswered after one timed-out read).
   */
  private async wakeUntilDone(streamPath: string): Promise<void> {
    for (let attempt = 1; !this.stopped; attempt += 1) {
      try {
        // Its own events may have brought it in meanwhile: then it is live already.
        const live = this.rebuilding.has(streamPath) ? undefined : this.processors.get(streamPath);
        const processor = live ?? (await this.bringIn(streamPath, "head"));
        if (!this.stopped) processor.scheduleFlush();
        return;
      } catch (error) {
        const retryInMs = Math.min(WAKE_RETRY_MAX_MS, WAKE_RETRY_FIRST_MS * 2 ** (attempt - 1));
        this.takeoverPending.add(streamPath);
        this.options.logger.warn({ err: error, partition: this.partition, streamPath, attempt, retryInMs }, "could not wake an agent with pending work; trying again");
        await new Promise((resolve) => setTimeout(resolve, retryInMs));
      }
    }
  }

  /** The agent's processor once rebuilt; one rebuild at a time per agent, however many ask. */
  private bringIn(streamPath: string, through: number | "head"): Promise<StreamProcessor> {
    const inFlight = this.rebuilding.get(streamPath);
    if (inFlight !== undefined) return inFlight;
    const rebuilt = this.rebuild(streamPath, through);
    this.rebuilding.set(streamPath, rebuilt);
    return rebuilt;
  }

  /** Hands live-lane chunks to their stream's processor (agents not in memory get no previews). */
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
    const processor = new StreamProcessor(streamPath, this.options.effects, this.options.logger.child({ streamPath }), restored, this.options.policy, this.options.redriveAfterMs);
    // Reacted to everything folded: the checkpoint need not wait for this agent's batches. Cleared
    // the moment it happens, not when a checkpoint happens to find the agent idle: an agent busy
    // under load was rarely idle at that instant and held the checkpoint back for seconds.
    processor.onIdle = () => {
      if (!this.setAside.has(streamPath) && this.processors.get(streamPath) === processor) this.unreacted.delete(streamPath);
    };
    return processor;
  }

  /**
   * Brings an agent into memory: its snapshot (if any, of this format), then its events after
   * the snapshot up to `through` (an offset, or the head). Folding those events reacts to them
   * again, which commits nothing: every reaction is idempotency-keyed.
   */
  private async rebuild(streamPath: string, through: number | "head"): Promise<StreamProcessor> {
    const snapshot = await this.options.snapshots.loadAgent(streamPath).catch((error: unknown) => {
      this.options.logger.warn({ err: error, streamPath }, "agent snapshot unreadable; rebuilding it from its events");
      return null;
    });
    try {
      const processor = this.newProcessor(streamPath, snapshot?.state);
      processor.snapshotOffset = snapshot?.offset ?? 0;
      if (snapshot?.keysIndexed === true) {
        processor.keysIndexed = true;
        // Spares the agent's next append the key index's "is this stream indexed" look-up.
        this.options.store.primeAppend(streamPath, { keysIndexed: true });
      }
      this.processors.set(streamPath, processor);
      const fromOffset = (snapshot?.offset ?? 0) + 1;
      if (through === "head" || fromOffset <= through) {
        this.loading.add(streamPath);
        try {
          const tail = await this.options.store.read(streamPath, through === "head" ? { fromOffset } : { fromOffset, limit: through - fromOffset + 1 });
          // A long stream folds in slices: lease renewals, publish acks and other agents'
          // batches go on meanwhile (its own arriving events are set aside until it is in, and
          // it decides and reacts only once the whole tail is folded).
          const held = processor.holdFlushes();
          try {
            let folded = 0;
            for (const event of tail) {
              processor.apply(event);
              if (++folded % REBUILD_SLICE_EVENTS === 0) await new Promise<void>((resolve) => setImmediate(resolve));
            }
          } finally {
            held.release();
          }
        } catch (error) {
          // Half built (its tail unread): not an agent anyone may act on; the next ask rebuilds it.
          if (this.processors.get(streamPath) === processor) this.processors.delete(streamPath);
          throw error;
        } finally {
          this.loading.delete(streamPath);
        }
      }
      if (snapshot !== null) this.options.onRetention?.("rebuilt");
      return processor;
    } finally {
      // Cleared before the caller resumes (no extra turn of the event loop for the feed).
      this.rebuilding.delete(streamPath);
      this.takeoverPending.delete(streamPath);
    }
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
          this.options.batchSink?.feedBatch(this.partition, batch);
          await this.fold(batch);
          this.sequence = batch.sequence;
          this.options.onEvents?.(batch.events.length);
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

  /**
   * Folds a batch into its agent when the agent is in memory; otherwise sets it aside in the
   * agent's own queue (in feed order) while the agent is brought in, and goes on with the feed.
   * Waits only when too many agents are being brought in at once.
   */
  private async fold(batch: FeedBatch): Promise<void> {
    const path = batch.streamPath;
    const first = batch.events[0];
    if (first === undefined) return;
    if (!this.unreacted.has(path)) this.unreacted.set(path, batch.sequence);
    const waiting = this.setAside.get(path);
    if (waiting !== undefined) {
      waiting.push(batch);
      return;
    }
    // An agent being rebuilt is in `processors` before its tail is folded: not ready yet.
    const processor = this.rebuilding.has(path) ? undefined : this.processors.get(path);
    if (processor !== undefined) {
      for (const event of batch.events) processor.apply(event);
      return;
    }
    this.setAside.set(path, [batch]);
    const folded: Promise<void> = this.foldWhenIn(path, (offsetsOfBatch(batch)?.first ?? first.offset) - 1).finally(() => {
      if (this.bringingIn.get(path) === folded) this.bringingIn.delete(path);
    });
    this.bringingIn.set(path, folded);
    if (this.bringingIn.size >= MAX_AGENTS_BROUGHT_IN) await Promise.race(this.bringingIn.values());
  }

  /**
   * Brings an agent in (its events through `through` from its snapshot and the store) and folds
   * the batches set aside for it meanwhile, trying again until it works or the worker stops: the
   * feed has gone past them, so nothing else would fold them.
   */
  private async foldWhenIn(streamPath: string, through: number): Promise<void> {
    for (let attempt = 1; !this.stopped; attempt += 1) {
      try {
        const processor = await this.bringIn(streamPath, through);
        // Stopped: what was set aside stays so, and so does the checkpoint before it.
        if (this.stopped) return;
        const batches = this.setAside.get(streamPath) ?? [];
        this.setAside.delete(streamPath);
        for (const batch of batches) for (const event of batch.events) processor.apply(event);
        const last = batches.at(-1);
        // (The record's last offset: past its last event when it holds some this version cannot read.)
        const lastOffset = last === undefined ? undefined : offsetsOfBatch(last)?.last;
        // The feed showed these records before the agent was in: the store client has no view of
        // the stream (dropped at eviction), and the last one is a view it can append after.
        if (last !== undefined && lastOffset !== undefined) this.options.store.primeAppend(streamPath, { record: { sequence: last.sequence, lastOffset } });
        return;
      } catch (error) {
        const retryInMs = Math.min(WAKE_RETRY_MAX_MS, WAKE_RETRY_FIRST_MS * 2 ** (attempt - 1));
        this.options.logger.warn({ err: error, partition: this.partition, streamPath, attempt, retryInMs }, "could not bring an agent in; its events wait, trying again");
        await new Promise((resolve) => setTimeout(resolve, retryInMs));
      }
    }
  }

  /** Snapshots quiet changed agents, evicts idle ones and advances the checkpoint. */
  private maintain(): Promise<void> {
    this.maintaining ??= this.runMaintenance().finally(() => {
      this.maintaining = undefined;
    });
    return this.maintaining;
  }

  private async runMaintenance(force = false): Promise<void> {
    const now = this.options.effects.now();
    const { snapshotIdleMs, snapshotEveryEvents, evictIdleMs } = this.retention;
    for (const processor of [...this.processors.values()]) {
      if (this.stopped && !force) return;
      if (!processor.isDirty() || !processor.isIdle()) continue;
      if (force || now - processor.lastActivityMs >= snapshotIdleMs || processor.eventsSinceSnapshot >= snapshotEveryEvents) {
        await this.saveSnapshot(processor);
      }
    }
    for (const [path, processor] of this.processors) {
      if (this.loading.has(path) || this.setAside.has(path) || !processor.canEvict(now, evictIdleMs)) continue;
      processor.close();
      this.processors.delete(path);
      // Nothing of an evicted agent stays behind: the store's view of its stream's end (for
      // the next append) is looked up again when the agent is rebuilt.
      this.options.store.forget(path);
      this.options.onRetention?.("evicted");
    }
    await this.saveCheckpoint();
  }

  private async saveSnapshot(processor: StreamProcessor): Promise<void> {
    const state = processor.state;
    try {
      // A state too large for one value is not stored; the agent is then rebuilt from its
      // older snapshot and events, which is always correct.
      processor.keysIndexed ||= this.options.store.appendHint(state.streamPath).keysIndexed === true;
      const keysIndexed = processor.keysIndexed ? { keysIndexed: true } : {};
      await this.options.snapshots.saveAgent({ format: SNAPSHOT_FORMAT, streamPath: state.streamPath, offset: state.lastFoldedOffset, state, ...keysIndexed });
      processor.snapshotOffset = Math.max(processor.snapshotOffset, state.lastFoldedOffset);
      processor.eventsSinceSnapshot = 0;
      this.options.onRetention?.("snapshot");
    } catch (error) {
      this.options.logger.warn({ err: error, streamPath: state.streamPath }, "could not save an agent snapshot; will try again");
    }
  }

  /** The checkpoint timer's turn: skipped while a write is still in flight. */
  private checkpointSoon(): void {
    if (this.checkpointing === undefined) void this.saveCheckpoint();
  }

  /** Writes the checkpoint after any write in flight (so an older one never lands after a newer). */
  private saveCheckpoint(): Promise<void> {
    const write: Promise<void> = (this.checkpointing ?? Promise.resolve()).then(() => this.writeCheckpoint()).finally(() => {
      if (this.checkpointing === write) this.checkpointing = undefined;
    });
    this.checkpointing = write;
    return write;
  }

  /**
   * The checkpoint is the feed position before the oldest batch some agent has not finished
   * reacting to (computed synchronously, so no batch slips between the check and the value).
   */
  private async writeCheckpoint(): Promise<void> {
    let sequence = this.sequence;
    for (const [path, firstSequence] of this.unreacted) {
      const processor = this.processors.get(path);
      if (!this.setAside.has(path) && (processor === undefined || processor.isIdle())) this.unreacted.delete(path);
      else sequence = Math.min(sequence, firstSequence - 1);
    }
    const pending = [...new Set([...this.takeoverPending, ...[...this.processors.values()].filter((p) => p.hasPendingWork()).map((p) => p.streamPath)])];
    const pendingKey = pending.join("\n");
    if (sequence <= this.checkpointSequence && pendingKey === this.lastPending) return;
    try {
      await this.options.snapshots.saveCheckpoint({ format: SNAPSHOT_FORMAT, partition: this.partition, sequence, pending });
      this.checkpointSequence = Math.max(this.checkpointSequence, sequence);
      this.lastPending = pendingKey;
      this.options.onRetention?.("checkpoint");
    } catch (error) {
      this.options.logger.warn({ err: error, partition: this.partition }, "could not save the partition checkpoint; will try again");
    }
  }

  /**
   * Writes the checkpoint as it stands, as its timer does: without waiting for any agent's
   * queued work (an agent still reacting holds it before its batch). Returns the feed sequence
   * of the newest checkpoint written.
   */
  async checkpoint(): Promise<number> {
    await this.saveCheckpoint();
    return this.checkpointSequence;
  }

  /**
   * Settles every agent's queued work, snapshots every changed agent and writes the
   * checkpoint (a graceful stop, and tests). Returns the checkpoint's feed sequence.
   */
  async checkpointNow(): Promise<number> {
    await this.waking;
    while (this.bringingIn.size > 0) await Promise.all(this.bringingIn.values());
    await this.maintaining;
    await Promise.all([...this.processors.values()].map((p) => p.settle()));
    await this.runMaintenance(true);
    return this.checkpointSequence;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.options.batchSink?.unfollowPartition(this.partition);
    if (this.maintainTimer) clearInterval(this.maintainTimer);
    if (this.checkpointTimer) clearInterval(this.checkpointTimer);
    await this.maintaining;
    await this.checkpointing;
    await this.waking;
    // Batches still set aside are not folded here: the checkpoint stays before them.
    await Promise.all(this.bringingIn.values());
    // The partition is another replica's now: this client keeps nothing of its agents.
    for (const [path, processor] of this.processors) {
      processor.close();
      this.options.store.forget(path);
    }
    await this.feed?.close();
    await this.live?.close();
    await this.loop?.catch(() => undefined);
    await this.liveLoop;
  }
}
