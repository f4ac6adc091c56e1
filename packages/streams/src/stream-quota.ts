// Each agent's event stream held to a quota of events and bytes, and each tenant's streams
// together. Every agent's events share one JetStream stream and one disk, and a key may append
// 1 MiB events 50 times a second: without quotas one tenant could fill the disk and every agent's
// next event would fail to commit.
//
// The usage is counted from the stream itself — every event, whoever appended it: the reducer's,
// the driver's and the host's as well as the keys' — in one ledger entry per stream
// (`{bytes, through}`: the events at offsets 1..through and their JSON bytes), shared by every
// process. A count reads only the events after `through`, so each event is read once for
// counting; events a process appends right after what it has counted are counted unread.
// Counting happens after an append commits, off its path; an append is admitted or refused by
// the usage last counted. So a stream ends over its quota by at most what was appended since
// that count: one turn's events, plus what the turns already requested write (their number is
// bounded by the contract's `maxAutonomousTurns`).
//
// A tenant — the streams under the prefix of their first segments — is held to a quota of bytes
// and streams too, in one more ledger entry, charged by the process whose count moved a stream's
// entry, by what it moved; so a key cannot spread its writes over many agents instead.
//
// Only appends from outside the machinery are refused (the gateway's, and scripts' through
// `itx`): a settlement must always commit, or its agent would wedge.

import { type AgentEvent, AgentRuntimeError, parseEventInput, streamPathSegments } from "@agentrt/contract";
import type { AppendOptions, AppendResult, EventStore } from "./event-store.ts";
import { jsonBytes } from "./batch.ts";
import { withAppend } from "./owned-store.ts";

export interface StreamQuotaLimits {
  /** The most bytes of event JSON (as stored: with offset and createdAt) one stream may hold. */
  readonly bytes: number;
  /** The most events one stream may hold. */
  readonly events: number;
}

export const DEFAULT_STREAM_QUOTA: StreamQuotaLimits = { bytes: 1024 * 1024 * 1024, events: 1_000_000 };

/**
 * A tenant: every stream under the path prefix of a stream's first `depth` segments (`/agents/acme`
 * for `/agents/acme/support/7` at depth 2; a stream of fewer segments is its own tenant). Without
 * it, one key could spread its writes over as many streams as it may create, each under its quota.
 */
export interface TenantQuotaLimits {
  /** Leading path segments that name a stream's tenant; 0 turns tenant quotas off. */
  readonly depth: number;
  /** The most bytes of event JSON a tenant's streams may hold together. */
  readonly bytes: number;
  /** The most streams a tenant may hold. */
  readonly streams: number;
}

export const DEFAULT_TENANT_QUOTA: TenantQuotaLimits = { depth: 2, bytes: 16 * 1024 * 1024 * 1024, streams: 100_000 };

/** A tenant's counted usage: the bytes of its streams' counted events, and how many streams were counted. */
export interface TenantUsage {
  readonly bytes: number;
  readonly streams: number;
}

export interface TenantLedgerEntry {
  readonly usage: TenantUsage;
  readonly revision: number;
}

/** The tenant of `streamPath` at `depth` segments. */
export function tenantOf(streamPath: string, depth: number): string {
  return `/${streamPathSegments(streamPath).slice(0, depth).join("/")}`;
}

/** A stream's counted usage: its events at offsets 1..`through` hold `bytes` of JSON. */
export interface StreamUsage {
  readonly bytes: number;
  readonly through: number;
}

export interface LedgerEntry {
  readonly usage: StreamUsage;
  readonly revision: number;
}

/** Where counted usage is kept, shared by every process that appends. */
export interface UsageLedger {
  get(streamPath: string): Promise<LedgerEntry | undefined>;
  /** Writes `usage` if the entry is still at `revision` (undefined: none yet); false when another writer moved it first. */
  put(streamPath: string, usage: StreamUsage, revision: number | undefined): Promise<boolean>;
  tenant(prefix: string): Promise<TenantLedgerEntry | undefined>;
  /** As `put`, for a tenant's entry. */
  putTenant(prefix: string, usage: TenantUsage, revision: number | undefined): Promise<boolean>;
}

/** A ledger in this process only (the memory store's, and tests'). */
export class MemoryUsageLedger implements UsageLedger {
  private readonly entries = new Map<string, LedgerEntry>();
  private readonly tenants = new Map<string, TenantLedgerEntry>();

  get(streamPath: string): Promise<LedgerEntry | undefined> {
    return Promise.resolve(this.entries.get(streamPath));
  }

  put(streamPath: string, usage: StreamUsage, revision: number | undefined): Promise<boolean> {
    return Promise.resolve(compareAndSet(this.entries, streamPath, usage, revision));
  }

  tenant(prefix: string): Promise<TenantLedgerEntry | undefined> {
    return Promise.resolve(this.tenants.get(prefix));
  }

  putTenant(prefix: string, usage: TenantUsage, revision: number | undefined): Promise<boolean> {
    return Promise.resolve(compareAndSet(this.tenants, prefix, usage, revision));
  }
}

function compareAndSet<U>(entries: Map<string, { usage: U; revision: number }>, name: string, usage: U, revision: number | undefined): boolean {
  if (entries.get(name)?.revision !== revision) return false;
  entries.set(name, { usage, revision: (revision ?? 0) + 1 });
  return true;
}

export interface StreamQuotaOptions {
  readonly limits?: Partial<StreamQuotaLimits>;
  /** Default `DEFAULT_TENANT_QUOTA`; `depth: 0` turns tenant quotas off. */
  readonly tenantLimits?: Partial<TenantQuotaLimits>;
  /** Default: a ledger in this process only. */
  readonly ledger?: UsageLedger;
  /** Streams whose usage is kept in memory; the least recently used beyond this are read from the ledger again. */
  readonly maxTracked?: number;
  /** Bytes of events one counting read asks for. */
  readonly readPageBytes?: number;
  /**
   * Counts reading at once, all streams together (each holds one page of `readPageBytes`): what
   * counting may hold in memory is bounded however many streams a key appends to at once.
   */
  readonly countsAtOnce?: number;
  /** A count that failed (the store or the ledger unreachable); the next append counts again. */
  readonly onError?: (error: unknown, streamPath: string) => void;
}

const LEDGER_ATTEMPTS = 10;
/** How long a tenant's usage read from the ledger is trusted before it is read again (others count into it too). */
const TENANT_FRESH_MS = 1_000;

export class StreamQuota {
  readonly limits: StreamQuotaLimits;
  readonly tenantLimits: TenantQuotaLimits;
  private readonly ledger: UsageLedger;
  private readonly maxTracked: number;
  private readonly readPageBytes: number;
  /** The usage last counted or read, per stream, least recently used first. */
  private readonly known = new Map<string, StreamUsage>();
  /** Per stream being counted: the offset to count through. */
  private readonly wanted = new Map<string, number>();
  private readonly counting = new Map<string, Promise<void>>();
  /** Per stream: the round of its count under way (a count through one target, its tenant charged). */
  private readonly rounds = new Map<string, Promise<void>>();
  /** Per tenant: charges summed while one is being written. */
  private readonly charges = new Map<string, { pending: TenantUsage; writing: Promise<void> | undefined }>();
  /** Tenants' usage as last read or charged here, and when it was read. */
  private readonly tenants = new Map<string, { usage: TenantUsage; readAtMs: number }>();
  private readonly countsAtOnce: number;
  private reading = 0;
  private readonly waitingToRead: (() => void)[] = [];

  constructor(
    /** What counting reads (the gateway's read connection). */
    private readonly reads: Pick<EventStore, "read" | "lastOffset">,
    private readonly options: StreamQuotaOptions = {},
  ) {
    this.limits = { ...DEFAULT_STREAM_QUOTA, ...options.limits };
    for (const [name, value] of Object.entries(this.limits)) {
      if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`stream quota ${name} must be a positive integer, got ${String(value)}`);
    }
    this.tenantLimits = { ...DEFAULT_TENANT_QUOTA, ...options.tenantLimits };
    for (const [name, value] of Object.entries(this.tenantLimits)) {
      if (!Number.isSafeInteger(value) || value < (name === "depth" ? 0 : 1)) {
        throw new RangeError(`tenant quota ${name} must be a ${name === "depth" ? "non-negative" : "positive"} integer, got ${String(value)}`);
      }
    }
    this.ledger = options.ledger ?? new MemoryUsageLedger();
    this.maxTracked = options.maxTracked ?? 10_000;
    this.readPageBytes = options.readPageBytes ?? 4 * 1024 * 1024;
    this.countsAtOnce = options.countsAtOnce ?? 4;
  }

  /**
   * Refuses (`quota_exceeded`) events that would take the stream, or its tenant, past its quota,
   * by the usage as last counted. A stream never counted yet is judged by its tenant alone (a new
   * one must fit in the tenant's count of streams), and counted once this append commits.
   */
  async admit(streamPath: string, events: readonly unknown[]): Promise<void> {
    const usage = this.known.get(streamPath) ?? (await this.readLedger(streamPath));
    const bytes = events.reduce<number>((sum, event) => sum + jsonBytes(event), 0);
    if (usage !== undefined && (usage.bytes + bytes > this.limits.bytes || usage.through + events.length > this.limits.events)) {
      throw new AgentRuntimeError(
        "quota_exceeded",
        `${streamPath} holds ${usage.through} events of ${usage.bytes} bytes; ${events.length} more of ${bytes} bytes would pass its quota of ${this.limits.events} events and ${this.limits.bytes} bytes. Nothing was appended.`,
        { details: { streamPath, events: usage.through, bytes: usage.bytes, quotaEvents: this.limits.events, quotaBytes: this.limits.bytes } },
      );
    }
    if (this.tenantLimits.depth === 0) return;
    const tenant = tenantOf(streamPath, this.tenantLimits.depth);
    const held = await this.tenantUsage(tenant);
    const creates = usage === undefined && (await this.reads.read(streamPath, { fromOffset: 1, limit: 1 })).length === 0;
    if (held.bytes + bytes <= this.tenantLimits.bytes && (!creates || held.streams < this.tenantLimits.streams)) return;
    const what = creates ? `a new stream ${streamPath} with ${bytes} bytes` : `${bytes} more bytes in ${streamPath}`;
    throw new AgentRuntimeError(
      "quota_exceeded",
      `Tenant ${tenant} (every stream under it) holds ${held.streams} streams of ${held.bytes} bytes; ${what} would pass its quota of ${this.tenantLimits.streams} streams and ${this.tenantLimits.bytes} bytes. Nothing was appended.`,
      {
        details: {
          streamPath,
          tenant,
          tenantStreams: held.streams,
          tenantBytes: held.bytes,
          quotaTenantStreams: this.tenantLimits.streams,
          quotaTenantBytes: this.tenantLimits.bytes,
        },
      },
    );
  }

  /** A tenant's usage: as charged here or read from the ledger within the last second, else read again. */
  async tenantUsage(tenant: string): Promise<TenantUsage> {
    const cached = this.tenants.get(tenant);
    if (cached !== undefined && Date.now() - cached.readAtMs < TENANT_FRESH_MS) return cached.usage;
    const usage = (await this.ledger.tenant(tenant))?.usage ?? { bytes: 0, streams: 0 };
    this.rememberTenant(tenant, usage);
    return usage;
  }

  /**
   * Counts the stream through `committed` (an append's events, just committed), off the caller's
   * path. Events right after the usage known here are counted at once, unread; a gap (others'
   * events) is read.
   */
  noteAppended(streamPath: string, committed: readonly AgentEvent[]): void {
    const first = committed[0];
    const last = committed.at(-1);
    if (first === undefined || last === undefined) return;
    const known = this.known.get(streamPath);
    if (known !== undefined && known.through === first.offset - 1) {
      this.remember(streamPath, { bytes: known.bytes + committed.reduce((sum, event) => sum + jsonBytes(event), 0), through: last.offset });
    }
    this.wanted.set(streamPath, Math.max(this.wanted.get(streamPath) ?? 0, last.offset));
    if (this.counting.has(streamPath)) return;
    const task = (async () => {
      try {
        // Again while appends committed during the count ask for more (a read that did not yet
        // see the target is not repeated: the next append counts on from it).
        for (let counted = 0; ; ) {
          const target = this.wanted.get(streamPath) ?? 0;
          if (target <= counted) return;
          const round = this.countThrough(streamPath, target);
          this.rounds.set(streamPath, round);
          try {
            await round;
          } finally {
            if (this.rounds.get(streamPath) === round) this.rounds.delete(streamPath);
          }
          counted = target;
        }
      } catch (error) {
        this.options.onError?.(error, streamPath);
      } finally {
        this.wanted.delete(streamPath);
        this.counting.delete(streamPath);
      }
    })();
    this.counting.set(streamPath, task);
  }

  /**
   * Counts the stream through the last event it holds when called, and gives its usage (a usage
   * report). Appends committed after the call are not waited for: a stream appended to without
   * pause is reported as of the call, not chased.
   */
  async countNow(streamPath: string, signal?: AbortSignal): Promise<StreamUsage> {
    const target = await this.reads.lastOffset(streamPath);
    // An append's count of this stream may be under way: it moves the stream's entry, then
    // charges the tenant. Counting beside it found the entry moved and returned before that
    // charge, so a report showed the stream counted and its tenant not yet (a loaded CI run).
    // Its round is waited for (before and after this count: a round started meanwhile may be the
    // one that moves the entry past this count), never the rounds of later appends.
    // A round's failure is the appends' count's (it logs it and the next append counts again), not the report's.
    await this.rounds.get(streamPath)?.catch(() => undefined);
    await this.countThrough(streamPath, target, signal === undefined ? {} : { signal });
    await this.rounds.get(streamPath)?.catch(() => undefined);
    return this.known.get(streamPath) ?? { bytes: 0, through: 0 };
  }

  /** The stream's usage as last counted here or in the ledger (undefined: never counted). */
  async usage(streamPath: string): Promise<StreamUsage | undefined> {
    return this.known.get(streamPath) ?? (await this.readLedger(streamPath));
  }

  /** Resolves once every count asked for so far has ended. */
  async idle(): Promise<void> {
    while (this.counting.size > 0) await Promise.all(this.counting.values());
  }

  private async readLedger(streamPath: string): Promise<StreamUsage | undefined> {
    const entry = await this.ledger.get(streamPath);
    if (entry !== undefined) this.remember(streamPath, entry.usage);
    return entry?.usage;
  }

  /** Counts the stream through `target` at least (a report's count stops there; others read on to the end). */
  private async countThrough(streamPath: string, target: number, report?: { readonly signal?: AbortSignal }): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const entry = await this.ledger.get(streamPath);
      const mine = this.known.get(streamPath);
      let usage = entry?.usage ?? { bytes: 0, through: 0 };
      if (mine !== undefined && mine.through > usage.through) usage = mine;
      if (usage.through < target) {
        const from = usage;
        usage = await this.inTurn(() => this.countFrom(streamPath, from, report === undefined ? undefined : target, report?.signal));
      }
      // An empty stream has nothing to count (a usage report of a path with no stream writes nothing).
      if (usage.through === 0) return;
      this.remember(streamPath, usage);
      if (entry !== undefined && entry.usage.through >= usage.through) return;
      if (await this.ledger.put(streamPath, usage, entry?.revision)) {
        // Only the process whose count moved the stream's entry charges its tenant, by what it moved.
        await this.charge(streamPath, { bytes: usage.bytes - (entry?.usage.bytes ?? 0), streams: entry === undefined ? 1 : 0 });
        return;
      }
      // Another process counted in between: its count is at least as far; look again.
      if (attempt === LEDGER_ATTEMPTS) return;
    }
  }

  /**
   * Adds `change` to the stream's tenant's entry. A process's charges to one tenant are summed
   * while one is being written and written together after it, so the counts of a busy tenant's
   * many streams do not race each other for its entry; only other processes' do.
   */
  private charge(streamPath: string, change: TenantUsage): Promise<void> {
    if (this.tenantLimits.depth === 0) return Promise.resolve();
    const tenant = tenantOf(streamPath, this.tenantLimits.depth);
    const charges = this.charges.get(tenant) ?? { pending: { bytes: 0, streams: 0 }, writing: undefined };
    this.charges.set(tenant, charges);
    charges.pending = { bytes: charges.pending.bytes + change.bytes, streams: charges.pending.streams + change.streams };
    charges.writing ??= (async () => {
      try {
        while (charges.pending.bytes !== 0 || charges.pending.streams !== 0) {
          const sum = charges.pending;
          charges.pending = { bytes: 0, streams: 0 };
          await this.writeCharge(tenant, sum);
        }
      } finally {
        this.charges.delete(tenant);
      }
    })();
    return charges.writing;
  }

  private async writeCharge(tenant: string, change: TenantUsage): Promise<void> {
    for (let attempt = 1; attempt <= LEDGER_ATTEMPTS; attempt++) {
      const entry = await this.ledger.tenant(tenant);
      const usage = { bytes: (entry?.usage.bytes ?? 0) + change.bytes, streams: (entry?.usage.streams ?? 0) + change.streams };
      if (await this.ledger.putTenant(tenant, usage, entry?.revision)) {
        this.rememberTenant(tenant, usage);
        return;
      }
    }
    throw new Error(`could not charge tenant ${tenant} with ${change.bytes} bytes: its ledger entry moved ${LEDGER_ATTEMPTS} times in a row`);
  }

  private rememberTenant(tenant: string, usage: TenantUsage): void {
    keepRecent(this.tenants, tenant, { usage, readAtMs: Date.now() }, this.maxTracked);
  }

  /** Runs `read` once fewer than `countsAtOnce` counts are reading, in the order they asked. */
  private async inTurn<T>(read: () => Promise<T>): Promise<T> {
    if (this.reading >= this.countsAtOnce) await new Promise<void>((resolve) => this.waitingToRead.push(resolve));
    else this.reading++;
    try {
      return await read();
    } finally {
      // Handed straight to the next in line, or released.
      const next = this.waitingToRead.shift();
      if (next === undefined) this.reading--;
      else next();
    }
  }

  /**
   * Counts on from `usage` to the stream's end, or (a report's count, given `stopAt`) until a
   * page reaches that offset: a count reads on past the append it was asked for (the machinery's
   * events after it), but a report must not chase a stream appended to without pause.
   */
  private async countFrom(streamPath: string, usage: StreamUsage, stopAt = Number.POSITIVE_INFINITY, signal?: AbortSignal): Promise<StreamUsage> {
    let { bytes, through } = usage;
    while (through < stopAt) {
      signal?.throwIfAborted();
      const page = await this.reads.read(streamPath, { fromOffset: through + 1, maxBytes: this.readPageBytes, ...(signal === undefined ? {} : { signal }) });
      if (page.length === 0) return { bytes, through };
      for (const event of page) bytes += jsonBytes(event);
      through = (page.at(-1) as { offset: number }).offset;
    }
    return { bytes, through };
  }

  private remember(streamPath: string, usage: StreamUsage): void {
    const current = this.known.get(streamPath);
    keepRecent(this.known, streamPath, current !== undefined && current.through > usage.through ? current : usage, this.maxTracked);
  }
}

/** Sets `key` as the most recently used entry of `map`, dropping the least recently used past `max`. */
function keepRecent<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > max) map.delete(map.keys().next().value as string);
}

/**
 * `store` with its durable appends held to `quota`: admitted before they are published, counted
 * after they commit. Live-lane appends pass (they are never stored); so do the other members.
 */
export function quotaStore<S extends EventStore>(store: S, quota: StreamQuota): S {
  const append = async (streamPath: string, events: readonly unknown[], options?: AppendOptions): Promise<AppendResult> => {
    if (isLiveBatch(events)) return await store.append(streamPath, events, options);
    await quota.admit(streamPath, events);
    const result = await store.append(streamPath, events, options);
    if (result.status === "committed") quota.noteAppended(streamPath, result.events);
    return result;
  };
  return withAppend(store, append);
}

/** A live-lane batch (the store refuses one that mixes the lanes); a malformed one is the store's to refuse. */
function isLiveBatch(events: readonly unknown[]): boolean {
  try {
    return events.length > 0 && parseEventInput(events[0], 0).ephemeral === true;
  } catch {
    return false;
  }
}
