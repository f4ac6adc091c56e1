// Partition leases in NATS KV: each reducer replica owns a fair share of the partitions, so
// every agent stream is folded by exactly one replica at a time in normal operation.
//
// A lease is a KV key written with compare-and-set. Two things keep it, each on its own loop so
// neither waits for the other (nor for a slow takeover):
// - a heartbeat rewrites every held lease (in parallel) and this replica's member key; the
//   bucket's TTL expires the keys of a replica that stopped heartbeating (the backstop for a
//   host or network that fails silently);
// - presence: each replica answers on its own liveness subject. The NATS server drops a
//   connection's subscriptions the moment the process dies (its socket closes), so a request
//   there gets "no responders" at once. A challenger that finds a lease (or a member key) whose
//   owner has no responder takes it over with compare-and-set on the revision it read, without
//   waiting for the TTL. A live holder that is merely slow (a long GC, a busy event loop) still
//   has its subscription: the probe times out, which counts as alive. So a dead holder is
//   detected within one acquisition round, and a live one loses nothing however busy it is.
//   Between rounds the holders of the partitions this replica lacks are probed more often (a
//   core request each, no KV): one found gone starts a round at once, so a takeover does not
//   wait for the next round's timer (a round reads the bucket, which under load takes long).
// Replicas count the live members to compute their fair share and hand surplus partitions back
// when a new replica joins. Two replicas briefly overlapping is harmless: every append the
// reducer makes is idempotency-keyed.

import { randomUUID } from "node:crypto";
import { Kvm, type KV } from "@nats-io/kv";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { type NatsConnection, type Subscription, nanos } from "@nats-io/nats-core";
import type { Logger } from "pino";
import { isNoResponders } from "./presence.ts";
import { untilCreated, untilNatsAnswers } from "./transient-retry.ts";

/**
 * Default lease TTL: only the backstop for a holder that vanished without closing its
 * connection (a killed one is found by presence). Kept long because under heavy load a KV
 * round trip was measured at 2 s (load average 40): a 3 s TTL then took live replicas' leases.
 */
export const DEFAULT_LEASE_TTL_MS = 6_000;

/** The liveness subjects' prefix: `<prefix>.<group>.<owner>`. */
export const LEASE_LIVENESS_PREFIX = "agentrt.leases";

export interface PartitionLeaseOptions {
  readonly nc: NatsConnection;
  readonly bucket?: string;
  /** The lease group, e.g. "reducer". */
  readonly group: string;
  /** This replica's unique id. */
  readonly owner: string;
  readonly partitionCount: number;
  readonly ttlMs?: number;
  /** Heartbeat period (default: a sixth of the TTL). */
  readonly renewMs?: number;
  /** Acquisition rounds: look for free or orphaned partitions this often (default: the heartbeat period, at most 0.5 s). */
  readonly acquireEveryMs?: number;
  /** Probe the other holders' presence this often between rounds (default 100 ms). */
  readonly watchEveryMs?: number;
  readonly replicas?: number;
  readonly logger: Logger;
  /** Called once per acquisition, never concurrently with onLost for the same partition; the leases keep being renewed meanwhile. */
  readonly onAcquired: (partition: number) => void | Promise<void>;
  readonly onLost: (partition: number) => void | Promise<void>;
}

export interface PartitionLeases {
  owned(): ReadonlySet<number>;
  /** Runs one acquisition round now (also runs on a timer). */
  tick(): Promise<void>;
  stop(options?: { release?: boolean }): Promise<void>;
}

interface Held {
  revision: number;
}

interface LeaseValue {
  readonly owner: string;
  /**
   * This process's run of the owner (a fresh id per start). Replicas are told apart by owner; a
   * process started again under the same owner while the old one still runs (a frozen one that
   * wakes) is told apart by this.
   */
  readonly incarnation?: string;
}

/** A subject token for an owner id (hostnames may hold dots). */
const ownerToken = (owner: string) => owner.replace(/[^A-Za-z0-9_-]/g, "_");

export function leaseLivenessSubject(group: string, owner: string): string {
  return `${LEASE_LIVENESS_PREFIX}.${ownerToken(group)}.${ownerToken(owner)}`;
}

/** Opens the bucket and makes its TTL the configured one (a bucket made with an older default keeps it otherwise). */
async function openLeaseBucket(nc: NatsConnection, jsm: JetStreamManager, name: string, ttlMs: number, replicas: number, logger: Logger): Promise<KV> {
  const kv = await untilCreated(`lease bucket ${name}`, () => new Kvm(nc).create(name, { ttl: ttlMs, history: 1, replicas }), { logger });
  const status = await untilNatsAnswers(`lease bucket ${name}`, () => kv.status(), { logger });
  if (status.ttl !== ttlMs) {
    const stream = `KV_${name}`;
    const { config } = await jsm.streams.info(stream);
    const window = Math.min(ttlMs, 120_000);
    await jsm.streams.update(stream, { ...config, max_age: nanos(ttlMs), duplicate_window: nanos(window) });
    logger.info({ bucket: name, from: status.ttl, to: ttlMs }, "lease bucket TTL changed to the configured one");
  }
  return kv;
}

export async function startPartitionLeases(options: PartitionLeaseOptions): Promise<PartitionLeases> {
  const { nc, logger, group, owner } = options;
  const ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
  const renewMs = options.renewMs ?? Math.max(50, Math.floor(ttlMs / 6));
  const acquireEveryMs = options.acquireEveryMs ?? Math.min(renewMs, 500);
  const watchEveryMs = options.watchEveryMs ?? 100;
  const probeTimeoutMs = Math.max(100, Math.min(1_000, Math.floor(ttlMs / 3)));
  const bucket = options.bucket ?? "agentrt_leases";
  const jsm = await jetstreamManager(nc);
  const kv = await openLeaseBucket(nc, jsm, bucket, ttlMs, options.replicas ?? 1, logger);
  const held = new Map<number, Held>();
  const leaseKey = (p: number) => `${group}.partition.${p}`;
  const memberKey = (who: string) => `${group}.member.${ownerToken(who)}`;
  const encode = (value: LeaseValue) => JSON.stringify(value);
  const incarnation = randomUUID();
  const leaseValue = () => encode({ owner, incarnation });
  /** A run's own liveness subject, beside its owner's. */
  const runLivenessSubject = (run: string) => `${leaseLivenessSubject(group, owner)}.${ownerToken(run)}`;
  let stopped = false;
  // Surplus is handed back only when the fair share has been the same for two rounds, so a
  // member that is counted out for a moment does not make partitions ping-pong.
  let previousFairShare = -1;
  /** Who held the partitions this replica lacked at the last round: watched between rounds. */
  let otherHolders = new Set<string>();

  // Presence: answer on our liveness subject for as long as this connection lives, and on this
  // run's own (another run of the same owner tells by it whether this one is still alive).
  const answer = (error: Error | null, msg: { respond(): boolean }) => {
    // A refused subscription calls back with an error and no message (nothing to answer).
    if (error === null && !stopped) msg.respond();
  };
  const presence: Subscription = nc.subscribe(leaseLivenessSubject(group, owner), { callback: answer });
  const runPresence: Subscription = nc.subscribe(runLivenessSubject(incarnation), { callback: answer });
  await nc.flush();

  // Acquisitions and losses of one partition run in order, off the heartbeat and round loops.
  const transitions = new Map<number, Promise<void>>();
  const inOrder = (partition: number, step: () => void | Promise<void>): Promise<void> => {
    const next = (transitions.get(partition) ?? Promise.resolve())
      .then(step)
      .catch((error: unknown) => logger.error({ err: error, partition }, "lease transition failed"));
    transitions.set(partition, next);
    return next;
  };

  const lose = (partition: number, why: string) => {
    if (!held.delete(partition)) return;
    logger.warn({ partition, why }, "lease lost");
    void inOrder(partition, () => options.onLost(partition));
  };

  const take = (partition: number, revision: number, how: string) => {
    held.set(partition, { revision });
    logger.info({ partition, how }, "lease acquired");
    void inOrder(partition, () => options.onAcquired(partition));
  };

  /**
   * Does anyone answer on a liveness subject? "No responders" means its connection is gone; a
   * timeout means busy, so alive. One probe per subject per round (`cache`).
   */
  const answers = async (subject: string, cache: Map<string, Promise<boolean>>): Promise<boolean> => {
    let answer = cache.get(subject);
    if (answer === undefined) {
      answer = nc.request(subject, undefined, { timeout: probeTimeoutMs }).then(
        () => true,
        (error: unknown) => !isNoResponders(error),
      );
      cache.set(subject, answer);
    }
    return answer;
  };
  /** Is the replica `who` connected? */
  const isAlive = async (who: string, cache: Map<string, Promise<boolean>>): Promise<boolean> => who === owner || answers(leaseLivenessSubject(group, who), cache);

  /**
   * A renewal refused for its revision. Someone else took the lease, unless the key still names
   * this replica: then an earlier renewal landed after its answer was lost (a timeout while the
   * bucket's stream elected a leader) and the lease is still ours at a revision we never heard of.
   * Taking that for a loss made every replica drop every partition at each NATS failover and
   * rebuild them all once the bucket answered again (the stream-leader chaos test's turns waited
   * 10-20 s for it). Only this process writes its incarnation, and another's takeover is a
   * compare-and-set on the revision it read, so a key naming our incarnation has not been taken
   * since. (Our owner alone would not do: a process started again under the same owner while
   * this one was frozen takes the key as its own, and both then held every partition, red-team.)
   */
  const renewalRejected = async (partition: number, lease: Held): Promise<void> => {
    let current;
    try {
      current = await kv.get(leaseKey(partition));
    } catch (error) {
      logger.warn({ err: error, partition }, "lease renewal refused and the lease could not be read; retrying");
      return;
    }
    if (held.get(partition) !== lease) return;
    const value = current !== null && current.operation === "PUT" ? parseLease(current.string()) : undefined;
    if (current !== null && value?.owner === owner && value.incarnation === incarnation) {
      lease.revision = current.revision;
      logger.info({ partition, revision: current.revision }, "an earlier lease renewal had landed unanswered; the lease is still held");
      return;
    }
    lose(partition, "renewal rejected");
  };

  // --- heartbeat ------------------------------------------------------------------------------
  let beating: Promise<void> | undefined;
  const heartbeat = async () => {
    if (stopped) return;
    const started = Date.now();
    await Promise.all([
      kv.put(memberKey(owner), encode({ owner })).catch((error: unknown) => logger.warn({ err: error }, "member heartbeat failed")),
      ...[...held].map(async ([partition, lease]) => {
        try {
          lease.revision = await kv.update(leaseKey(partition), leaseValue(), lease.revision);
        } catch (error) {
          // Anything but a rejected compare-and-set (a timeout, a reconnect) is retried on the next beat.
          if (!isWrongRevision(error) || held.get(partition) !== lease) {
            logger.warn({ err: error, partition }, "lease renewal failed; retrying");
            return;
          }
          await renewalRejected(partition, lease);
        }
      }),
    ]);
    const took = Date.now() - started;
    if (took > ttlMs / 2) logger.warn({ tookMs: took, ttlMs }, "lease heartbeat slow");
  };
  const beat = () => {
    beating ??= heartbeat().finally(() => {
      beating = undefined;
    });
    return beating;
  };

  // --- acquisition rounds ---------------------------------------------------------------------
  const liveMembers = async (probes: Map<string, Promise<boolean>>): Promise<number> => {
    const members: Array<{ key: string; who: string; revision: number }> = [];
    // One request, not a key-listing consumer: under load a listing was seen to hang (and with
    // it every later round) and to list a key rewritten meanwhile twice.
    const prefix = `$KV.${bucket}.`;
    const info = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}${group}.member.*` });
    for (const subject of Object.keys(info.state.subjects ?? {})) {
      const key = subject.slice(prefix.length);
      const entry = await kv.get(key);
      if (entry && entry.operation === "PUT") members.push({ key, who: parseOwner(entry.string()) ?? "", revision: entry.revision });
    }
    let count = 0;
    for (const member of members) {
      if (await isAlive(member.who, probes)) count += 1;
      // A dead member's key would count until its TTL; drop it (only if nobody rewrote it since).
      else await kv.delete(member.key, { previousSeq: member.revision }).catch(() => undefined);
    }
    return Math.max(1, count);
  };

  const round = async () => {
    if (stopped) return;
    const probes = new Map<string, Promise<boolean>>();
    const fairShare = Math.ceil(options.partitionCount / (await liveMembers(probes)));
    const stableShare = fairShare === previousFairShare;
    previousFairShare = fairShare;
    // Hand back surplus so a replica that just joined gets its share.
    while (stableShare && held.size > fairShare) {
      const partition = [...held.keys()].pop() as number;
      const lease = held.get(partition) as Held;
      await kv.delete(leaseKey(partition), { previousSeq: lease.revision }).catch(() => undefined);
      lose(partition, "rebalanced");
    }
    // Every partition we lack is looked at at once: a dead replica's share moves in one round trip.
    const wanted = Array.from({ length: options.partitionCount }, (_, p) => p).filter((p) => !held.has(p));
    const holders = new Set<string>();
    await Promise.all(
      wanted.map(async (p) => {
        const entry = await kv.get(leaseKey(p));
        const value = entry === null || entry.operation !== "PUT" ? null : parseLease(entry.string());
        const holder = value === null ? null : value?.owner;
        if (holder !== null && holder !== undefined && holder !== owner) holders.add(holder);
        // Our own id on a lease we do not hold: this replica restarted under the same id, and the
        // run before is taken over once it is gone. Its liveness is its run's own subject: both
        // answer on the owner's, and two live runs of one owner took each other's leases for ever
        // (red-team). A value of a version before runs were named is taken at once, as ever.
        const free =
          entry === null ||
          entry.operation !== "PUT" ||
          holder === undefined ||
          (holder === owner
            ? value?.incarnation === undefined || value.incarnation === incarnation || !(await answers(runLivenessSubject(value.incarnation), probes))
            : !(await isAlive(holder as string, probes)));
        if (!free || stopped || held.size >= fairShare) return;
        try {
          const revision = entry === null || entry.operation !== "PUT" ? await kv.create(leaseKey(p), leaseValue()) : await kv.update(leaseKey(p), leaseValue(), entry.revision);
          if (held.size >= fairShare || stopped) {
            // Others won this round's race for our share meanwhile: give this one straight back.
            await kv.delete(leaseKey(p), { previousSeq: revision }).catch(() => undefined);
            return;
          }
          take(p, revision, entry === null || entry.operation !== "PUT" ? "free" : holder === owner ? "restarted" : `holder ${holder ?? "?"} gone`);
        } catch {
          // Someone else got there first.
        }
      }),
    );
    otherHolders = holders;
  };

  let rounds: Promise<void> = Promise.resolve();
  const runRound = () => {
    rounds = rounds.then(round).catch((error: unknown) => logger.warn({ err: error }, "lease round failed"));
    return rounds;
  };

  // --- presence watch between rounds -----------------------------------------------------------
  // Probes do not wait for each other: a probe sent just before its holder died is never
  // answered and only times out (probeTimeoutMs, which counts as alive), so a watch that waited
  // for it saw the death a second late (the reducer killed under load: taken over at +1.1 s).
  // Each tick sends its own; the first "no responders" starts a round.
  let takingOver = false;
  const watch = () => {
    if (takingOver || stopped || otherHolders.size === 0) return;
    const probes = new Map<string, Promise<boolean>>();
    for (const who of otherHolders) {
      void isAlive(who, probes).then(async (alive) => {
        if (alive || takingOver || stopped || !otherHolders.has(who)) return;
        takingOver = true;
        try {
          otherHolders = new Set();
          logger.info({ holder: who }, "a lease holder is gone; taking over without waiting for the next round");
          await runRound();
        } finally {
          takingOver = false;
        }
      });
    }
  };

  await beat();
  await runRound();
  const beatTimer = setInterval(() => void beat(), renewMs);
  const roundTimer = setInterval(() => void runRound(), acquireEveryMs);
  const watchTimer = setInterval(watch, watchEveryMs);

  return {
    owned: () => new Set(held.keys()),
    tick: runRound,
    async stop({ release = true } = {}) {
      stopped = true;
      clearInterval(beatTimer);
      clearInterval(roundTimer);
      clearInterval(watchTimer);
      await rounds;
      await beating;
      if (release) {
        for (const [partition, lease] of held) {
          await kv.delete(leaseKey(partition), { previousSeq: lease.revision }).catch(() => undefined);
        }
        await kv.delete(memberKey(owner)).catch(() => undefined);
      }
      presence.unsubscribe();
      runPresence.unsubscribe();
      held.clear();
      await Promise.all(transitions.values());
    },
  };
}

/** A lease value's owner and run, or undefined for a value that names none. */
function parseLease(text: string): { owner: string; incarnation?: string } | undefined {
  try {
    const value = JSON.parse(text) as Partial<LeaseValue>;
    if (typeof value.owner !== "string") return undefined;
    return typeof value.incarnation === "string" ? { owner: value.owner, incarnation: value.incarnation } : { owner: value.owner };
  } catch {
    return undefined;
  }
}

function parseOwner(text: string): string | undefined {
  return parseLease(text)?.owner;
}

/** The server refused a compare-and-set: the key's last revision is not the one we wrote. */
export function isWrongRevision(error: unknown): boolean {
  return error instanceof Error && /wrong last sequence|10071/i.test(`${error.message} ${(error as { code?: unknown }).code ?? ""}`);
}
