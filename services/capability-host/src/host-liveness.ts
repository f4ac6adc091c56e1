// Proof of death for orphaning. Each host holds a liveness lease (a key in a KV bucket whose
// TTL expires it) refreshed on a timer; its main thread stays free because checks and scripts
// run in worker threads. Before appending `script-run-started` a host records that it runs the
// script. A replica that finds a started-but-unsettled script settles it `orphaned` only when
// the recorded host is gone: its presence subject has no responders (the process died and its
// connection closed: found at once), or its lease has expired (the backstop). A host that is
// merely slow or stalled (GC, SIGSTOP, a saturated machine) keeps its subscription and its
// script, and settles it with its real result.

import { createHash } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { nanos, type NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "pino";
import { z } from "zod";
import type { RunLiveness } from "./script-runner.ts";
import { isWrongRevision, parseJsonOrUndefined } from "@agentrt/service-kit";
import { createShared } from "@agentrt/streams/jetstream";

export const HOST_LIVENESS_BUCKET = "agentrt_host_liveness";
export const SCRIPT_RUNS_BUCKET = "agentrt_script_runs";

export interface HostLivenessOptions {
  readonly nc: NatsConnection;
  /** This process's id (unique per incarnation). */
  readonly hostId: string;
  /** A host whose lease was not refreshed for this long is dead. */
  readonly ttlMs: number;
  readonly replicas?: number;
  /** How long the first lease may wait for the bucket to become writable (default 30 s). */
  readonly startTimeoutMs?: number;
  readonly logger: Logger;
  /** Whether a host's connection is up: false only when its presence subject has no responders. */
  readonly isConnected?: (hostId: string) => Promise<boolean>;
}

/** `presence`: the host answers presence probes (a host of an older version does not: only its lease counts). */
const runRecordSchema = z.object({ hostId: z.string().min(1), presence: z.boolean().optional() });

/** KV keys allow [-/_=.a-zA-Z0-9]: a stream path and an execution id are hashed into one. */
function runKey(streamPath: string, executionId: string): string {
  return `run.${createHash("sha256").update(`${streamPath}\u0000${executionId}`).digest("hex")}`;
}

const hostKey = (hostId: string): string => `host.${hostId.replace(/[^-_a-zA-Z0-9]/g, "_")}`;

export class HostLiveness implements RunLiveness {
  private timer: NodeJS.Timeout | undefined;
  /** The lease's revision as this host last wrote it: a refresh is a compare-and-set on it. */
  private revision: number | undefined;
  /** performance.now() when the refresh that last found the lease held was sent. */
  private confirmedAt = Number.NEGATIVE_INFINITY;
  /**
   * Bumped whenever this host may have been found dead by another (its lease lapsed, or its
   * connection dropped): scripts started before run only while theirs is current.
   */
  private generation = 0;
  private refreshing: Promise<void> | undefined;

  private constructor(
    private readonly leases: KV,
    private readonly runs: KV,
    private readonly options: HostLivenessOptions,
  ) {}

  /**
   * Opens the buckets and takes this host's lease (before any script is claimed). A replicated
   * bucket that was just created, or whose NATS node just died, has no leader for a moment and
   * answers "no responders": start-up waits for the election instead of failing (the soak found
   * two hosts starting together on an R3 cluster dying here). Whatever still fails after
   * `startTimeoutMs` fails the start-up as before.
   */
  static async start(options: HostLivenessOptions): Promise<HostLiveness> {
    const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
    for (let wait = 100; ; wait = Math.min(wait * 2, 1_000)) {
      try {
        return await HostLiveness.open(options);
      } catch (error) {
        if (Date.now() + wait > deadline) throw error;
        options.logger.warn({ err: error }, "the host liveness buckets are not writable yet; retrying");
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  private static async open(options: HostLivenessOptions): Promise<HostLiveness> {
    const kvm = new Kvm(options.nc);
    const replicas = options.replicas ?? 1;
    const [leases, runs] = await Promise.all([
      createShared(() => kvm.create(HOST_LIVENESS_BUCKET, { ttl: options.ttlMs, history: 1, replicas })),
      // Run records outlive any script (the longest run is minutes); the TTL only sweeps leftovers.
      createShared(() => kvm.create(SCRIPT_RUNS_BUCKET, { ttl: 24 * 3_600_000, history: 1, replicas })),
    ]);
    // A bucket made by an older version keeps its TTL until told otherwise: death is detected
    // with this version's lease, like the work consumer follows this version's ack wait.
    const status = await leases.status();
    if (status.ttl !== options.ttlMs) {
      const jsm = await jetstreamManager(options.nc);
      const name = `KV_${HOST_LIVENESS_BUCKET}`;
      const { config } = await jsm.streams.info(name);
      const maxAge = nanos(options.ttlMs);
      // The server refuses a duplicates window longer than the max age (KV made it ≤ the old TTL).
      await jsm.streams.update(name, { ...config, max_age: maxAge, duplicate_window: Math.min(config.duplicate_window, maxAge) });
      options.logger.info({ ttlMs: options.ttlMs, wasMs: status.ttl }, "updated the liveness leases' TTL");
    }
    const liveness = new HostLiveness(leases, runs, options);
    await liveness.refresh();
    liveness.watchConnection();
    const every = Math.max(100, Math.floor(options.ttlMs / 3));
    liveness.timer = setInterval(() => {
      liveness.refresh().catch((error: unknown) => options.logger.warn({ err: error }, "could not refresh the host's liveness lease"));
    }, every);
    liveness.timer.unref();
    return liveness;
  }

  /** One refresh at a time; a caller that needs the lease confirmed joins the one in flight. */
  private refresh(): Promise<void> {
    this.refreshing ??= this.writeLease().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /**
   * Writes the lease as a compare-and-set on the revision this host last wrote. A host stalled
   * past its TTL (SIGSTOP, a GC pause, a starved machine) found its lease gone: another host may
   * have settled its running scripts `orphaned` meanwhile ("NOT re-run"), yet the scripts went
   * on after it woke, their side effects landing after that settlement (red-team). Finding the
   * lease lapsed fences every script started before; the lease is then taken anew.
   */
  private async writeLease(): Promise<void> {
    const sentAt = performance.now();
    const key = hostKey(this.options.hostId);
    const value = JSON.stringify({ hostId: this.options.hostId, at: Date.now() });
    if (this.revision !== undefined) {
      try {
        this.revision = await this.leases.update(key, value, this.revision);
        this.confirmedAt = sentAt;
        return;
      } catch (error) {
        if (!isWrongRevision(error)) throw error;
        this.lapsed("its liveness lease lapsed (the host was stalled past HOST_LIVENESS_TTL_MS)");
      }
    }
    this.revision = await this.leases.put(key, value);
    this.confirmedAt = sentAt;
  }

  private lapsed(why: string): void {
    this.generation++;
    this.options.logger.warn({ hostId: this.options.hostId, why }, "this host may have been found dead: the scripts it runs are fenced (no further itx calls; none starts its body)");
  }

  /** A dropped connection is a death another host may have seen (its presence subject had no responders). */
  private watchConnection(): void {
    void (async () => {
      for await (const status of this.options.nc.status()) {
        if (status.type === "disconnect") this.lapsed("its NATS connection dropped");
      }
    })().catch(() => undefined);
  }

  /** What a script started now is fenced by (see `holds`). */
  currentGeneration(): number {
    return this.generation;
  }

  /**
   * Whether a script started under `generation` may go on: no lapse since, and the lease
   * confirmed within half its TTL (an older confirmation is renewed first, so a host that just
   * woke from a stall learns of the lapse before the script's next call, not after).
   */
  async holds(generation: number): Promise<boolean> {
    if (performance.now() - this.confirmedAt >= this.options.ttlMs / 2) await this.refresh().catch(() => undefined);
    return generation === this.generation && performance.now() - this.confirmedAt < this.options.ttlMs;
  }

  async recordRun(streamPath: string, executionId: string): Promise<void> {
    await this.runs.put(runKey(streamPath, executionId), JSON.stringify({ hostId: this.options.hostId, presence: this.options.isConnected !== undefined }));
  }

  async runnerOf(streamPath: string, executionId: string): Promise<"self" | "alive" | "gone"> {
    const record = await this.runs.get(runKey(streamPath, executionId));
    // No record: started by a host from before run records, or the record is gone: no proof of life.
    if (record === null || record.operation !== "PUT") return "gone";
    const parsed = runRecordSchema.safeParse(parseJsonOrUndefined(record.string()));
    if (!parsed.success) return "gone";
    // Host ids are unique per incarnation: only this process can have written it.
    if (parsed.data.hostId === this.options.hostId) return "self";
    return (await this.isGone(parsed.data.hostId, parsed.data.presence === true)) ? "gone" : "alive";
  }

  /**
   * Whether the host `hostId` is gone: its connection is down (no responder on its presence
   * subject, when `answersPresence`; a reconnecting host misses probes for a moment) or its lease
   * ran out. Judged by NATS, never by a clock of this host or of that one.
   */
  async isGone(hostId: string, answersPresence = true): Promise<boolean> {
    if (hostId === this.options.hostId) return false;
    if (answersPresence && this.options.isConnected !== undefined && !(await this.options.isConnected(hostId))) return true;
    const lease = await this.leases.get(hostKey(hostId));
    return lease === null || lease.operation !== "PUT";
  }

  async forgetRun(streamPath: string, executionId: string): Promise<void> {
    await this.runs.delete(runKey(streamPath, executionId));
  }

  /** Stops refreshing and gives the lease up (a stopped host is dead at once to the others). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.leases.delete(hostKey(this.options.hostId)).catch(() => undefined);
  }
}
