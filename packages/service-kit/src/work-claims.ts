// Claims of in-flight work items, so a dead worker's item moves on within a probe round instead
// of the work queue's ack wait (the same principle as the partition leases' presence, see
// leases.ts).
//
// A worker records the items it runs in its kind's KV bucket under one key of its own
// (`<kind>.<owner>.held`), whose value is the set of their ack subjects. Each worker answers on
// its own liveness subject for as long as its connection lives. Every worker watches the claims
// of its kind and, every probe period, asks each other owner with claims whether it is there
// (the owners of claims already in the bucket when it starts are asked at once: a restarted
// worker that was the only one is who finds its predecessor's items):
// - "no responders": the NATS server dropped the owner's subscriptions, which it does the moment
//   the process dies (its socket closes). The first survivor to remove the owner's key
//   (compare-and-set on the revision it saw) naks every item in it on the owner's behalf, so the
//   queue hands them out again at once and live workers run them as any delivery: an item is
//   acked when that run settles.
// - an answer or a timeout: alive (a frozen or busy process keeps its subscription and merely
//   does not answer in time). The ack wait stays the backstop for those and for partitions.
// A wrong verdict costs a duplicate attempt, never a duplicate result: every settlement is
// idempotency-keyed, so the slower attempt commits nothing.
//
// The set is written so that the turn's path pays as little as possible: the claims taken in one
// event-loop turn share one put, issued at the end of that turn and not waiting for an earlier
// put (puts on one connection are stored in the order sent, so the last one holds the latest
// set) — an item is thus unrecorded for no longer than when each item had its own put. A release
// that leaves items held writes nothing by itself: the set shrinks with the next claim's put, or
// a probe period later. Until then a survivor may nak an item already answered, which is a no-op
// (see work-queue.ts); if that delivery was meanwhile naked and handed to another worker, the
// cost is a duplicate attempt, as with any wrong verdict. The release that empties the set
// deletes the key at the end of the event-loop turn.

import type { JsMsg } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import type { Logger } from "pino";
import { z } from "zod";
import type { WorkKind } from "./work-queue.ts";
import { isNoResponders } from "./presence.ts";
import { parseJsonOrUndefined } from "./json.ts";
import { untilCreated, untilNatsAnswers } from "./transient-retry.ts";

/**
 * The claims bucket of one kind of work: each kind's workers run as their own NATS user, granted
 * only their own bucket. One shared bucket let a host's user copy a driver's ack subjects under
 * a made-up owner, which the drivers then found dead and naked while their model calls ran,
 * asking the model again each time (red-team). A worker of an earlier version wrote its claims
 * to the shared `agentrt_work_claims`: if it dies during the upgrade, its items wait for the
 * work queue's ack wait instead.
 */
export function workClaimsBucket(kind: WorkKind): string {
  return `agentrt_work_claims_${kind}`;
}
/** Liveness subjects of workers with claims: `<prefix>.<kind>.<owner>`. */
export const WORK_CLAIM_LIVENESS_PREFIX = "agentrt.claims";
/** How often the claims of other workers are checked: a dead worker's item moves on within about this. */
export const DEFAULT_CLAIM_PROBE_MS = 100;
/** A probe not answered within this counts as alive (busy, frozen or far away). */
export const DEFAULT_CLAIM_PROBE_TIMEOUT_MS = 500;
/** Leftover claims (a worker died and nobody was left to hand its items back) expire after this. */
const CLAIMS_TTL_MS = 3_600_000;

/** A subject or key token for an owner id (hostnames may hold dots). */
export const claimOwnerToken = (owner: string): string => owner.replace(/[^A-Za-z0-9_-]/g, "_");

export function claimLivenessSubject(kind: WorkKind, owner: string): string {
  return `${WORK_CLAIM_LIVENESS_PREFIX}.${kind}.${claimOwnerToken(owner)}`;
}

const ackSubject = z.string().startsWith("$JS.ACK.");
// `ack`: one item per key, as written before the per-owner set; read so that a worker started
// during an upgrade still hands back the items of an older one that died.
const claimValueSchema = z.union([z.object({ owner: z.string().min(1), acks: z.array(ackSubject) }), z.object({ owner: z.string().min(1), ack: ackSubject })]);

export interface WorkClaimsOptions {
  readonly nc: NatsConnection;
  readonly kind: WorkKind;
  /** This worker's id, unique per incarnation. */
  readonly owner: string;
  readonly logger: Logger;
  readonly probeEveryMs?: number;
  readonly probeTimeoutMs?: number;
  readonly replicas?: number;
  /** Told when a dead owner's item was handed back by this worker. */
  readonly onHandedBack?: (owner: string) => void;
}

export interface WorkClaims {
  /** Records that this worker runs the delivered item; resolves once that is stored (not awaited by the caller: errors are logged). */
  claim(msg: JsMsg): Promise<void>;
  /** Forgets the item once it was acked, naked or terminated (stored with the next write). */
  release(msg: JsMsg): Promise<void>;
  /** Whether `owner` is connected: false only on "no responders" (its connection is gone). */
  isAlive(owner: string): Promise<boolean>;
  stop(): Promise<void>;
}

interface SeenClaim {
  readonly acks: readonly string[];
  readonly revision: number;
}

export async function startWorkClaims(options: WorkClaimsOptions): Promise<WorkClaims> {
  const { nc, kind, owner, logger } = options;
  const probeEveryMs = options.probeEveryMs ?? DEFAULT_CLAIM_PROBE_MS;
  const probeTimeoutMs = options.probeTimeoutMs ?? DEFAULT_CLAIM_PROBE_TIMEOUT_MS;
  const kv: KV = await untilCreated("work claims bucket", () => new Kvm(nc).create(workClaimsBucket(kind), { ttl: CLAIMS_TTL_MS, history: 1, replicas: options.replicas ?? 1 }), { logger });
  const ownToken = claimOwnerToken(owner);
  const ownKey = `${kind}.${ownToken}.held`;
  let stopped = false;

  // Presence first: a claim must never be visible before its owner answers for it.
  const presence: Subscription = nc.subscribe(claimLivenessSubject(kind, owner), {
    // A refused subscription calls back with an error and no message (nothing to answer).
    callback: (error, msg) => {
      if (error === null && !stopped) msg.respond();
    },
  });
  await nc.flush();

  // Other owners' claims, as the watch reports them: owner token → key → claim.
  const seen = new Map<string, Map<string, SeenClaim>>();
  const isAliveToken = (token: string): Promise<boolean> =>
    nc.request(`${WORK_CLAIM_LIVENESS_PREFIX}.${kind}.${token}`, undefined, { timeout: probeTimeoutMs }).then(
      () => true,
      (error: unknown) => !isNoResponders(error),
    );

  /** The first survivor to remove a dead owner's claims hands its items back to the queue. */
  const handBack = async (token: string, key: string, claim: SeenClaim): Promise<void> => {
    try {
      await kv.delete(key, { previousSeq: claim.revision });
    } catch {
      return; // another survivor removed it first, or the watch has a later set to act on
    }
    for (const ack of claim.acks) {
      nc.publish(ack, "-NAK");
      logger.warn({ kind, claimant: token, key, ack }, "the claimant of a work item is gone; handed the item back to the queue");
      options.onHandedBack?.(token);
    }
  };

  // Probes in flight per owner. A busy owner (a host serving a script's calls) answers late, so a
  // probe is often out when it dies, and the server never answers that one: the next rounds probe
  // again meanwhile, so the death is seen within a round instead of at that probe's timeout
  // (half a second of every killed host's recovery before). Bounded to one timeout's worth.
  const probing = new Map<string, number>();
  const maxInFlight = Math.max(1, Math.ceil(probeTimeoutMs / probeEveryMs));
  const probe = (token: string): void => {
    const inFlight = probing.get(token) ?? 0;
    if (inFlight >= maxInFlight || stopped) return;
    probing.set(token, inFlight + 1);
    void isAliveToken(token)
      .then(async (alive) => {
        if (alive || stopped) return;
        await Promise.all([...(seen.get(token) ?? new Map<string, SeenClaim>())].map(([key, claim]) => handBack(token, key, claim)));
      })
      .catch((error: unknown) => logger.warn({ err: error, claimant: token }, "work claim probe failed"))
      .finally(() => {
        const left = (probing.get(token) ?? 1) - 1;
        if (left <= 0) probing.delete(token);
        else probing.set(token, left);
      });
  };
  const probeRound = (): void => {
    for (const token of seen.keys()) probe(token);
  };
  const watch = await untilNatsAnswers("work claims watch", () => kv.watch({ key: `${kind}.>` }), { logger });
  // The claims already in the bucket when this worker starts (the watch's first values, through
  // the first one it marks as an update) are probed as they arrive, not a probe period later: a
  // restarted worker that was the only one finds its predecessor's items at once.
  let initialValues = true;
  const watching = (async () => {
    for await (const entry of watch) {
      const initial = initialValues;
      if (entry.isUpdate) initialValues = false;
      const [, token] = entry.key.split(".");
      if (token === undefined || token === ownToken) continue;
      const claims = seen.get(token) ?? new Map<string, SeenClaim>();
      if (entry.operation === "PUT") {
        const parsed = claimValueSchema.safeParse(parseJsonOrUndefined(entry.string()));
        if (!parsed.success) {
          logger.warn({ key: entry.key }, "ignoring a malformed work claim");
          continue;
        }
        claims.set(entry.key, { acks: "acks" in parsed.data ? parsed.data.acks : [parsed.data.ack], revision: entry.revision });
        seen.set(token, claims);
        if (initial) probe(token);
      } else {
        claims.delete(entry.key);
        if (claims.size === 0) seen.delete(token);
      }
    }
  })().catch((error: unknown) => {
    if (!stopped) logger.error({ err: error }, "work claims watch ended; dead workers' items wait for the ack wait");
  });

  const timer = setInterval(probeRound, probeEveryMs);
  timer.unref();

  // This worker's items (delivery → ack subject) and the writes of their set.
  const held = new Map<string, string>();
  const heldKey = (msg: JsMsg) => `${msg.seq}_${msg.info.deliveryCount}`;
  let stored = false; // whether the last write left the key in the bucket
  let changed = false; // whether the set differs from the last write
  let nextWrite: Promise<void> | undefined; // the put at the end of this event-loop turn
  let lazyWrite: NodeJS.Timeout | undefined;

  const write = (): Promise<void> => {
    clearTimeout(lazyWrite);
    lazyWrite = undefined;
    if (!changed) return Promise.resolve();
    changed = false;
    if (held.size === 0) {
      if (!stored) return Promise.resolve();
      stored = false;
      return kv.delete(ownKey).then(
        () => undefined,
        (error: unknown) => logger.warn({ err: error }, "could not remove this worker's work claims; they expire with the bucket's TTL"),
      );
    }
    stored = true;
    const items = held.size;
    return kv.put(ownKey, JSON.stringify({ owner, acks: [...held.values()] })).then(
      () => undefined,
      (error: unknown) => logger.warn({ err: error, items }, "could not record work claims; the ack wait covers these items"),
    );
  };

  const writeAtTurnEnd = (): Promise<void> =>
    (nextWrite ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        nextWrite = undefined;
        void write().then(resolve);
      }),
    ));

  return {
    claim(msg) {
      const ack = ackSubjectOf(msg);
      if (ack === undefined || stopped) return Promise.resolve();
      held.set(heldKey(msg), ack);
      changed = true;
      return writeAtTurnEnd();
    },
    release(msg) {
      if (!held.delete(heldKey(msg))) return Promise.resolve();
      changed = true;
      if (stopped) return Promise.resolve();
      // Idle: the key goes at once, so a worker killed between turns leaves nothing for the
      // survivors to hand back; that write costs nothing while the worker is busy.
      if (held.size === 0) void writeAtTurnEnd();
      else if (nextWrite === undefined && lazyWrite === undefined) {
        lazyWrite = setTimeout(() => void write(), probeEveryMs);
        lazyWrite.unref();
      }
      return Promise.resolve();
    },
    isAlive: (who) => (who === owner ? Promise.resolve(true) : isAliveToken(claimOwnerToken(who))),
    async stop() {
      stopped = true;
      clearInterval(timer);
      watch.stop();
      await watching;
      // The last write: the key goes once nothing is held; items still held stay recorded, so
      // survivors hand them back once the presence below is gone.
      await nextWrite;
      if (!nc.isClosed() && !nc.isDraining()) await write();
      presence.unsubscribe();
      // Once stop() resolves the server has dropped the presence subscription (the flush's PONG
      // follows the UNSUB), so a probe from any connection gets "no responders", not a timeout.
      if (!nc.isClosed() && !nc.isDraining()) await nc.flush().catch(() => undefined);
    },
  };
}

/** The subject a delivery is acked on (the message's reply subject; the client's type does not declare it). */
function ackSubjectOf(msg: JsMsg): string | undefined {
  const reply: unknown = (msg as unknown as { reply?: unknown }).reply;
  return typeof reply === "string" && reply.startsWith("$JS.ACK.") ? reply : undefined;
}
