// The idempotency-key index: one KV entry per (stream, key) saying which record was meant to
// carry the key, so a keyed append checks its keys with a few lookups instead of reading the
// stream's whole history. Entries are RESERVATIONS written (compare-and-set) before the record
// is published, never after, so "no entry" proves "no such key" on an indexed stream; an entry
// is checked against the record it names (writer.ts decides what a reservation means). A key
// that only ever rides in one batch with a settlement key (`settlementKeyRiddenBy`) has no entry:
// it is taken exactly when that key is, and told from the same record.
//
// A stream is "indexed" once every key of its history is in the index: a stream whose first
// record was written by this store is indexed from the start, and says so in that record's
// `Agentrt-Keys-Indexed` header (the index's epoch, see below) or, when its keys were reserved
// only alongside the publish, in a marker entry written once they are; an older stream is
// scanned once, by the first keyed append that needs it, and marked.
//
// The epoch is a random id kept in the bucket itself: a bucket deleted and created again, or
// purged, gets a new one, so a header written for an index that is gone claims nothing.

import { createHash, randomUUID } from "node:crypto";
import { AgentRuntimeError, streamPathSegments } from "@agentrt/contract";
import type { JetStreamClient } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { classifyNatsError, isTransient, isWrongLastSequence } from "./errors.ts";
import type { JetStreamPublisher } from "./publisher.ts";
import { createShared } from "./shared-create.ts";
import { type DirectKvEntry, DirectGets } from "./direct-get.ts";
import type { StreamUsage, TenantUsage, UsageLedger } from "../stream-quota.ts";

export interface Reservation {
  /** First offset of the record meant to carry the key. */
  readonly first: number;
  /** KV revision, for compare-and-set. */
  readonly revision: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The entry holding the index's epoch (entries of streams start with `k.`, `m.` or `u.`, of tenants with `t.`). */
const EPOCH_KEY = "epoch";

export class KeyIndex {
  /** The bucket's subject prefix: `$KV.<bucket>`, as the KV client writes it. */
  private readonly subjectPrefix: string;

  private constructor(
    private readonly kv: KV,
    private readonly bucket: string,
    private readonly publisher: JetStreamPublisher,
    /** This index's epoch: what a stream's first record names when its keys are all here. */
    readonly epoch: string,
    /** Direct gets on the publisher's inbox, for a bucket that allows them (not replicated). */
    private readonly direct: DirectGets | undefined,
  ) {
    this.subjectPrefix = `$KV.${bucket}`;
  }

  /**
   * Opens (creating if needed) the index bucket. A replicated bucket is read through its
   * leader: a follower's stale "no entry" would only cost a lost compare-and-set, but a stale
   * entry would cost a wrong verdict.
   */
  static async open(js: JetStreamClient, publisher: JetStreamPublisher, bucket: string, replicas: number): Promise<KeyIndex> {
    const kv = await createShared(() => new Kvm(js).create(bucket, { history: 1, replicas, allow_direct: replicas === 1 }));
    return new KeyIndex(kv, bucket, publisher, await epochOf(kv, bucket), replicas === 1 ? new DirectGets(publisher.requests) : undefined);
  }

  /** An entry, read as the KV client reads it (a direct get of the key's last message). */
  private async entry(name: string): Promise<DirectKvEntry | null> {
    if (this.direct === undefined) return await this.kv.get(name);
    return await this.direct.kvEntry(this.bucket, name);
  }

  async lookup(streamPath: string, key: string): Promise<Reservation | undefined> {
    const entry = await this.entry(keyOf(streamPath, key));
    if (entry === null || entry.operation !== "PUT") return undefined;
    // A malformed entry names no record (first 0): it reads as stale and is replaced.
    return { first: parseFirst(entry.value) ?? 0, revision: entry.revision };
  }

  /**
   * Reserves `key` for the record starting at `first`: creates the entry when `revision` is
   * undefined, else replaces exactly that revision. Resolves to the entry's new revision, or
   * undefined when another writer changed it first.
   */
  async reserve(streamPath: string, key: string, first: number, revision: number | undefined): Promise<number | undefined> {
    const value = encoder.encode(JSON.stringify({ first }));
    const entry = keyOf(streamPath, key);
    try {
      // What the KV client's create and update send (a put expecting the key's last revision,
      // 0 for none), through the store's publisher: every keyed append makes one.
      return await this.publisher.publish(`${this.subjectPrefix}.${entry}`, value, { lastSubjectSequence: revision ?? 0 });
    } catch (error) {
      if (!isWrongLastSequence(error)) throw error;
      if (revision !== undefined) return undefined;
    }
    // A create refused: the key has an entry, or a delete or purge marker (the store never
    // removes an entry; an operator may), which is replaced as the KV client's create does.
    const current = await this.entry(entry);
    if (current !== null && current.operation === "PUT") return undefined;
    try {
      return await this.publisher.publish(`${this.subjectPrefix}.${entry}`, value, { lastSubjectSequence: current?.revision ?? 0 });
    } catch (error) {
      if (isWrongLastSequence(error)) return undefined;
      throw error;
    }
  }

  /** Records a key of the stream's history as it is (the migration scan of an older stream). */
  async record(streamPath: string, key: string, first: number): Promise<void> {
    await this.kv.put(keyOf(streamPath, key), encoder.encode(JSON.stringify({ first })));
  }

  async isIndexed(streamPath: string): Promise<boolean> {
    const entry = await this.entry(markerOf(streamPath));
    return entry !== null && entry.operation === "PUT";
  }

  async markIndexed(streamPath: string): Promise<void> {
    await this.publisher.publish(`${this.subjectPrefix}.${markerOf(streamPath)}`, encoder.encode("1"));
  }

  /**
   * The streams' and tenants' counted usage (stream-quota.ts), in this bucket: one `u.<segments>`
   * entry per stream and one `t.<segments>` entry per tenant.
   */
  get usageLedger(): UsageLedger {
    return {
      get: async (streamPath) => {
        const entry = await this.usageEntry(`u.${streamPathSegments(streamPath).join(".")}`, parseUsage);
        return entry === undefined ? undefined : { usage: entry.usage ?? { bytes: 0, through: 0 }, revision: entry.revision };
      },
      put: (streamPath, usage, revision) => this.putUsageEntry(`u.${streamPathSegments(streamPath).join(".")}`, { bytes: usage.bytes, through: usage.through }, revision),
      tenant: async (prefix) => {
        const entry = await this.usageEntry(`t.${streamPathSegments(prefix).join(".")}`, parseTenantUsage);
        return entry === undefined ? undefined : { usage: entry.usage ?? { bytes: 0, streams: 0 }, revision: entry.revision };
      },
      putTenant: (prefix, usage, revision) => this.putUsageEntry(`t.${streamPathSegments(prefix).join(".")}`, { bytes: usage.bytes, streams: usage.streams }, revision),
    };
  }

  /** A usage entry and its revision; a deleted or malformed one has no usage (it counts again from nothing, and is replaced). */
  private async usageEntry<U>(name: string, parse: (value: unknown) => U | undefined): Promise<{ usage: U | undefined; revision: number } | undefined> {
    const entry = await this.entry(name);
    if (entry === null) return undefined;
    let usage: U | undefined;
    if (entry.operation === "PUT") {
      try {
        usage = parse(JSON.parse(decoder.decode(entry.value)));
      } catch {
        usage = undefined;
      }
    }
    return { usage, revision: entry.revision };
  }

  /** Writes a usage entry if it is still at `revision` (undefined: none); false when another writer moved it first. */
  private async putUsageEntry(name: string, usage: object, revision: number | undefined): Promise<boolean> {
    try {
      await this.publisher.publish(`${this.subjectPrefix}.${name}`, encoder.encode(JSON.stringify(usage)), { lastSubjectSequence: revision ?? 0 });
      return true;
    } catch (error) {
      if (isWrongLastSequence(error)) return false;
      throw error;
    }
  }
}

/**
 * The bucket's epoch, created by the first store to open it (two racing agree on the winner's).
 * The first read of a bucket two stores had just created at once timed out once in CI, on a
 * loaded machine (nats-server 2.9's direct get), and failed the store's open: a read that timed
 * out is asked again, EPOCH_READ_ATTEMPTS times in all.
 *
 * Every service's NATS user may write this bucket, so the entry may hold anything: an empty
 * value, one that is no epoch, or a delete marker. Such an entry had every store that opened
 * afterwards loop here for good (its create refused, its value never taken). It is replaced,
 * compare-and-set on its revision, by a new epoch. That is safe for the keys reserved under the
 * old one: their entries stay and are still checked against the records they name, and a new
 * epoch claims less, never more: no stream's first record names it yet, so a stream whose
 * header names the old epoch (written by a store still running with it) is read and marked
 * once by the first keyed append that needs it, as an older stream is. An entry that will not
 * take a well-formed epoch after EPOCH_REPAIR_ATTEMPTS tries fails the open, naming the entry.
 */
async function epochOf(kv: KV, bucket: string): Promise<string> {
  let found = "missing";
  for (let attempt = 1; attempt <= EPOCH_REPAIR_ATTEMPTS; attempt++) {
    const entry = await readEpoch(kv);
    if (entry !== null && entry.operation === "PUT" && isEpoch(entry.string())) return entry.string();
    found = entry === null ? "missing" : entry.operation !== "PUT" ? `a ${entry.operation} marker` : `the value ${JSON.stringify(entry.string().slice(0, 64))}`;
    try {
      // Create where there is no entry; else replace exactly the revision read, so two stores
      // repairing at once agree on the winner's epoch.
      if (entry === null) await kv.create(EPOCH_KEY, encoder.encode(randomUUID()));
      else await kv.update(EPOCH_KEY, encoder.encode(randomUUID()), entry.revision);
    } catch (error) {
      if (!isWrongLastSequence(error)) throw classifyNatsError(error, `replace the key index's epoch (key ${JSON.stringify(EPOCH_KEY)} of bucket ${bucket}), which is ${found}`);
    }
  }
  throw new AgentRuntimeError(
    "unavailable",
    `The key index's epoch (key ${JSON.stringify(EPOCH_KEY)} of bucket ${bucket}, subject $KV.${bucket}.${EPOCH_KEY}) is ${found}, not an epoch, and could not be replaced in ${EPOCH_REPAIR_ATTEMPTS} tries: another client keeps writing it. Stop that writer; the entry is then repaired on the next start.`,
    { retryable: true, details: { bucket, key: EPOCH_KEY, found } },
  );
}

/** Tries at replacing an entry that holds no epoch before the open fails (each a read and a compare-and-set). */
const EPOCH_REPAIR_ATTEMPTS = 8;

/** An epoch as the stores write it (randomUUID). */
function isEpoch(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}

const EPOCH_READ_ATTEMPTS = 3;

async function readEpoch(kv: KV): ReturnType<KV["get"]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await kv.get(EPOCH_KEY);
    } catch (error) {
      if (attempt >= EPOCH_READ_ATTEMPTS || !isTransient(error)) throw error;
    }
  }
}

/** `k.<segments>.<sha256(key)>`: keys are free text, so they are hashed into one token. */
function keyOf(streamPath: string, key: string): string {
  return `k.${streamPathSegments(streamPath).join(".")}.${createHash("sha256").update(key).digest("hex")}`;
}

function markerOf(streamPath: string): string {
  return `m.${streamPathSegments(streamPath).join(".")}`;
}

const counted = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

function parseUsage(value: unknown): StreamUsage | undefined {
  const { bytes, through } = (value ?? {}) as { bytes?: unknown; through?: unknown };
  return counted(bytes) && counted(through) ? { bytes, through } : undefined;
}

function parseTenantUsage(value: unknown): TenantUsage | undefined {
  const { bytes, streams } = (value ?? {}) as { bytes?: unknown; streams?: unknown };
  return counted(bytes) && counted(streams) ? { bytes, streams } : undefined;
}

function parseFirst(value: Uint8Array): number | undefined {
  try {
    const parsed: unknown = JSON.parse(decoder.decode(value));
    if (typeof parsed === "object" && parsed !== null && "first" in parsed && Number.isInteger(parsed.first) && (parsed.first as number) > 0) {
      return parsed.first as number;
    }
  } catch {
    // Malformed: the caller reads it as naming no record.
  }
  return undefined;
}
