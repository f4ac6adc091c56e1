// Agent-scoped storage behind itx.kv and itx.files. One KV bucket and one object store are
// shared by all agents; each agent's entries live under its own prefix, derived from its
// stream path (whose segments contain no "." or ":"), so no agent can name another's keys.
// Files are listed from an index bucket keyed by agent, not from the object store, whose
// listing reads every agent's files. Each agent's files and keys are held to a quota
// (usage-meter.ts).

import { randomUUID } from "node:crypto";
import { isWrongRevision } from "@agentrt/service-kit";
import type { KV } from "@nats-io/kv";
import type { ObjectInfo, ObjectStore } from "@nats-io/obj";
import { ITX_FILE_MAX_BYTES } from "./file-limits.ts";
import { PerAgentQueue, type Quota, type Usage, UsageMeter } from "./usage-meter.ts";

export const AGENT_KV_BUCKET = "AGENT_KV";
export const AGENT_FILES_BUCKET = "AGENT_FILES";
/** One key per agent file: `<stream path without leading "/">.<path segments, each base64url>`. */
export const AGENT_FILES_INDEX_BUCKET = "AGENT_FILES_INDEX";
/** Marks the index as holding every file written before it existed (see `backfillFileIndex`). */
const BACKFILLED_KEY = "backfilled";
/** The most entries one itx.kv.list or itx.files.list answers with; past it the call asks for a longer prefix. */
export const ITX_LIST_MAX_ENTRIES = 10_000;
/**
 * A file path's longest form, in bytes of UTF-8: its index key (the path's segments in base64url)
 * and its object's name must stay well inside a NATS subject. Counted in characters, 1 000 "€"
 * made a key of 4 000 bytes; past the server's 4 096-byte control line it dropped the host's
 * connection, and every script the host ran stalled with it.
 */
export const ITX_FILE_PATH_MAX = 1_024;
/** A KV key's longest form (its characters are ASCII): it is a token of the entry's subject. */
export const ITX_KV_KEY_MAX = 512;

/**
 * What one agent's workspace (itx.files) and its keys (itx.kv) may hold. Both stores are shared,
 * so without a quota one agent's scripts could fill the NATS server's disk for every agent.
 */
export const DEFAULT_FILE_QUOTA: Quota = { bytes: 256 * 1024 * 1024, entries: ITX_LIST_MAX_ENTRIES };
export const DEFAULT_KV_QUOTA: Quota = { bytes: 64 * 1024 * 1024, entries: ITX_LIST_MAX_ENTRIES };

export { ITX_FILE_MAX_BYTES };

/** How long a write waits for another host's write of the same agent's files before it fails (retryable). */
export const FILES_WRITE_LOCK_WAIT_MS = 30_000;
/**
 * A write lock this old is taken over: its holder died mid-write (a write of ITX_FILE_MAX_BYTES
 * takes well under a second). Compared with this host's clock, so it leaves room for skew.
 */
export const FILES_WRITE_LOCK_STALE_MS = 60_000;

const USER_KEY = /^[-/_=.a-zA-Z0-9]+$/;
/** Characters of a script's bad key or path an error message quotes. */
const SHOWN_INPUT_MAX = 80;

/** A script's input as an error message quotes it: as JSON, a long string cut to 80 characters, with "…" inside its quotes. */
export function shownInput(value: unknown): string {
  if (typeof value !== "string" || value.length <= SHOWN_INPUT_MAX) return JSON.stringify(value) ?? String(value);
  return JSON.stringify(`${value.slice(0, SHOWN_INPUT_MAX)}…`);
}

export class ItxInputError extends Error {
  override readonly name = "ItxInputError";
}

/** A listing that found more entries than one answers with (it read that many first); a script sees an ItxInputError. */
export class ItxListTooLongError extends ItxInputError {}

/** A call that met another holding what it needs for too long: the same call may succeed later. */
export class ItxBusyError extends Error {
  override readonly name = "ItxBusyError";
}

export class AgentKv {
  private readonly meter: UsageMeter;
  private readonly queue = new PerAgentQueue();

  constructor(
    private readonly kv: KV,
    quota: Quota = DEFAULT_KV_QUOTA,
  ) {
    // The bare scope is the usage key: every user key is `<scope>.<key>`.
    this.meter = new UsageMeter(kv, (agentPath) => agentPath.slice(1), quota, (agentPath) => this.usage(agentPath));
  }

  private key(agentPath: string, key: unknown): string {
    if (typeof key !== "string" || !USER_KEY.test(key) || key.startsWith(".") || key.endsWith(".") || key.includes("..")) {
      throw new ItxInputError(`itx.kv: key ${shownInput(key)} must be a non-empty string of letters, digits, "-", "_", "/", "=", "." (not starting or ending with ".", no "..")`);
    }
    if (key.length > ITX_KV_KEY_MAX) throw new ItxInputError(`itx.kv: a key of ${key.length} characters is over the ${ITX_KV_KEY_MAX}-character limit`);
    return `${agentPath.slice(1)}.${key}`;
  }

  async get(agentPath: string, key: unknown): Promise<unknown> {
    const entry = await this.kv.get(this.key(agentPath, key));
    if (entry === null || entry.operation !== "PUT") return null;
    return JSON.parse(entry.string()) as unknown;
  }

  async set(agentPath: string, key: unknown, value: unknown): Promise<void> {
    const stored = this.key(agentPath, key);
    const json = JSON.stringify(value ?? null);
    const size = Buffer.byteLength(json);
    await this.queue.run(agentPath, async () => {
      const before = await this.sizeOf(stored);
      const change: Usage = { bytes: size - (before ?? 0), entries: before === undefined ? 1 : 0 };
      const quota = this.meter.quota;
      await this.meter.take(agentPath, change, (reached) =>
        new ItxInputError(`itx.kv: setting "${String(key)}" (${size} bytes) would take this agent's keys to ${reached.bytes} bytes in ${reached.entries} keys, over its quota of ${quota.bytes} bytes and ${quota.entries} keys`),
      );
      try {
        await this.kv.put(stored, json);
      } catch (error) {
        await this.meter.giveBack(agentPath, change).catch(() => undefined);
        throw error;
      }
    });
  }

  async delete(agentPath: string, key: unknown): Promise<void> {
    const stored = this.key(agentPath, key);
    await this.queue.run(agentPath, async () => {
      const before = await this.sizeOf(stored);
      await this.kv.delete(stored);
      if (before !== undefined) await this.meter.giveBack(agentPath, { bytes: before, entries: 1 });
    });
  }

  private async sizeOf(stored: string): Promise<number | undefined> {
    const entry = await this.kv.get(stored);
    return entry === null || entry.operation !== "PUT" ? undefined : entry.value.length;
  }

  /**
   * The agent's keys and their values' bytes, counted from the bucket in one pass (one consumer):
   * the keys and then a get per key made a recount 10 000 requests, and a script at its quota
   * asks for one with every set it is refused.
   */
  private async usage(agentPath: string): Promise<Usage> {
    const sizes = new Map<string, number>();
    // The bucket keeps one entry per key (history 1); a later entry of a key replaces an earlier.
    for await (const entry of await this.kv.history({ key: `${agentPath.slice(1)}.>` })) {
      if (entry.operation === "PUT") sizes.set(entry.key, entry.length);
      else sizes.delete(entry.key);
    }
    let bytes = 0;
    for (const size of sizes.values()) bytes += size;
    return { bytes, entries: sizes.size };
  }

  async list(agentPath: string, prefix: string): Promise<string[]> {
    const scope = `${agentPath.slice(1)}.`;
    const keys: string[] = [];
    const found = await this.kv.keys(`${scope}>`);
    for await (const k of found) {
      const own = k.slice(scope.length);
      if (!own.startsWith(prefix)) continue;
      if (keys.length === ITX_LIST_MAX_ENTRIES) {
        found.stop();
        throw tooMany("itx.kv.list", prefix, "keys");
      }
      keys.push(own);
    }
    return keys.sort();
  }
}

type IndexedFile = { size: number; revision: number };

export class AgentFiles {
  private readonly meter: UsageMeter;
  private readonly queue = new PerAgentQueue();
  /** Names this host in the write locks it holds (for whoever reads the index). */
  private readonly lockOwner: string;
  /** Each lock this host waited on: its revision and since when it has seen it unchanged (performance.now()). */
  private readonly lockSeen = new Map<string, { revision: number; sinceMs: number }>();

  constructor(
    private readonly store: ObjectStore,
    private readonly index: KV,
    quota: Quota = DEFAULT_FILE_QUOTA,
    private readonly lockTiming: { readonly waitMs: number; readonly staleMs: number } = { waitMs: FILES_WRITE_LOCK_WAIT_MS, staleMs: FILES_WRITE_LOCK_STALE_MS },
    /** The hosts' liveness: a lock names this host by its id, and one whose host is gone is free. */
    private readonly holders?: LockHolders,
  ) {
    this.meter = new UsageMeter(index, usageKey, quota, (agentPath) => this.usage(agentPath));
    this.lockOwner = holders?.self ?? randomUUID();
  }

  private name(agentPath: string, path: unknown): string {
    if (typeof path !== "string" || path.length === 0 || path.startsWith("/") || path.split("/").some((s) => s === ".." || s === "")) {
      throw new ItxInputError(`itx.files: path ${shownInput(path)} must be relative ("notes/a.md"), with no "..", "//" or leading "/"`);
    }
    const bytes = Buffer.byteLength(path);
    if (bytes > ITX_FILE_PATH_MAX) {
      throw new ItxInputError(`itx.files: a path of ${bytes} bytes (UTF-8) is over the ${ITX_FILE_PATH_MAX}-byte limit`);
    }
    // The object store's client encodes names with btoa, which takes Latin-1 only: "日本.txt" failed
    // with an opaque InvalidCharacterError from deep inside it.
    const beyond = [...path].find((c) => c.codePointAt(0)! > 0xff);
    if (beyond !== undefined) {
      throw new ItxInputError(`itx.files: path ${shownInput(path)} has ${JSON.stringify(beyond)}; file names may use Latin-1 characters only (U+0000–U+00FF)`);
    }
    return `${agentPath}:${path}`;
  }

  async bytes(agentPath: string, path: unknown): Promise<Uint8Array> {
    const name = this.name(agentPath, path);
    const missing = () => new ItxInputError(`itx.files: no file "${String(path)}" in this agent's workspace`);
    // Its size first: a file over the bound is refused before it is loaded.
    const info = await this.store.info(name);
    if (info === null || info.deleted) throw missing();
    if (info.size > ITX_FILE_MAX_BYTES) throw tooLarge(path, info.size, "read");
    const data = await this.store.getBlob(name);
    if (data === null) throw missing();
    // Replaced by a larger one in between.
    if (data.length > ITX_FILE_MAX_BYTES) throw tooLarge(path, data.length, "read");
    return data;
  }

  async write(agentPath: string, path: unknown, data: Uint8Array): Promise<{ path: string; size: number }> {
    const name = this.name(agentPath, path);
    newFileNameRefusal(path as string);
    if (data.length > ITX_FILE_MAX_BYTES) throw tooLarge(path, data.length, "write");
    return await this.queue.run(agentPath, () => this.underWriteLock(agentPath, () => this.writeNow(agentPath, name, path as string, data)));
  }

  /**
   * Runs `task` holding the agent's files write lock, across hosts. The object store replaces a
   * file by writing the new chunks, then its metadata, then purging the chunks of the metadata
   * it read at the start: two hosts replacing one file at once both purged the same old chunks,
   * and the loser's stayed stored for ever, outside the agent's quota (red-team). The per-agent
   * queue orders one host's writes; this orders all hosts'. A holder that died is taken over
   * once its lock is FILES_WRITE_LOCK_STALE_MS old.
   */
  private async underWriteLock<T>(agentPath: string, task: () => Promise<T>): Promise<T> {
    const key = writeLockKey(agentPath);
    // This attempt's own mark: a create or update that landed although its answer was lost (a
    // NATS failover) is found by it on the next read, and held, not waited for (red-team).
    const token = randomUUID();
    const value = () => JSON.stringify({ owner: this.lockOwner, token, atMs: Date.now(), ...(this.holders === undefined ? {} : { live: true as const }) } satisfies WriteLock);
    const { waitMs, staleMs } = this.lockTiming;
    const giveUpAt = Date.now() + waitMs;
    let revision: number | undefined;
    let lastError: unknown;
    for (let pause = 10; revision === undefined; pause = Math.min(pause * 2, 250)) {
      const entry = await this.index.get(key);
      const held = entry !== null && entry.operation === "PUT" ? parseWriteLock(entry.string()) : undefined;
      if (entry !== null && held?.token !== undefined && held.token === token) {
        revision = entry.revision;
        break;
      }
      // This host's writes of one agent run one at a time (the per-agent queue), so a lock naming
      // this host is one it failed to give back: taken at once, not after the stale time.
      const free = entry === null || held === undefined || held.owner === this.lockOwner || (await this.holderGone(key, entry.revision, held, staleMs));
      if (free) {
        try {
          revision = entry === null ? await this.index.create(key, value()) : await this.index.update(key, value(), entry.revision);
        } catch (error) {
          // Another host took it between the read and the write; or the answer was lost, and the
          // next read tells whether the write landed.
          if (!isWrongRevision(error) && !/exists/i.test((error as Error).message)) lastError = error;
        }
      }
      if (revision !== undefined) break;
      if (Date.now() > giveUpAt) {
        throw lastError ?? new ItxBusyError(`itx.files: another script has been writing this agent's files for over ${waitMs / 1000} s; try the write again`);
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
    try {
      return await task();
    } finally {
      await this.releaseWriteLock(key, revision);
    }
  }

  /**
   * Whether a lock's holder will not give it back. One naming a host with liveness is free once
   * that host's lease has run out (NATS's clock: not a presence probe, which a reconnecting host
   * misses for a moment while its write goes on), or once this host has seen that very lock
   * unchanged for `staleMs` by its own clock (a live host whose release failed). Any other (a lock
   * of the version before, or of a host without liveness) once the time it was taken, by its
   * holder's clock, is `staleMs` old: a host whose clock ran a minute ahead took fresh ones for stale.
   */
  private async holderGone(key: string, revision: number, held: WriteLock, staleMs: number): Promise<boolean> {
    if (held.live !== true || this.holders === undefined) return Date.now() - held.atMs > staleMs;
    const seen = this.lockSeen.get(key);
    const now = performance.now();
    if (seen === undefined || seen.revision !== revision) {
      keepRecentLock(this.lockSeen, key, { revision, sinceMs: now });
    } else if (now - seen.sinceMs > staleMs) {
      return true;
    }
    return await this.holders.gone(held.owner);
  }

  /** Gives the lock back; a release that fails for NATS is tried again (a lock left blocks other hosts for the stale time). */
  private async releaseWriteLock(key: string, revision: number): Promise<void> {
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        await this.index.delete(key, { previousSeq: revision });
        return;
      } catch (error) {
        if (isWrongRevision(error)) return; // taken over meanwhile: no longer ours to give back
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
  }

  private async writeNow(agentPath: string, name: string, path: string, data: Uint8Array): Promise<{ path: string; size: number }> {
    // Counted against the agent's quota before anything is stored; given back if storing fails.
    const replaced = (await this.indexed(fileKey(agentPath, path)))?.size;
    const change: Usage = { bytes: data.length - (replaced ?? 0), entries: replaced === undefined ? 1 : 0 };
    const quota = this.meter.quota;
    await this.meter.take(agentPath, change, (reached) =>
      new ItxInputError(`itx.files: writing "${path}" (${data.length} bytes) would take this agent's workspace to ${reached.bytes} bytes in ${reached.entries} files, over its quota of ${quota.bytes} bytes and ${quota.entries} files`),
    );
    let info: ObjectInfo;
    try {
      info = await this.store.putBlob({ name }, data);
    } catch (error) {
      await this.meter.giveBack(agentPath, change).catch(() => undefined);
      throw error;
    }
    // Listed once indexed: should indexing fail, so does the write, and writing again lists it.
    await indexFile(this.index, agentPath, path, info);
    return { path, size: info.size };
  }

  /** The agent's files and their bytes, counted from its index entries (in one pass, as `list`). */
  private async usage(agentPath: string): Promise<Usage> {
    const files = (await indexedFiles(this.index, `${agentPath.slice(1)}.>`, () => true, Number.POSITIVE_INFINITY)) ?? new Map<string, IndexedPath>();
    let bytes = 0;
    for (const { size } of files.values()) bytes += size;
    return { bytes, entries: files.size };
  }

  private async indexed(key: string): Promise<IndexedFile | undefined> {
    const entry = await this.index.get(key);
    return entry === null || entry.operation !== "PUT" ? undefined : (entry.json() as IndexedFile);
  }

  /**
   * This agent's files whose path starts with the prefix. Only its own index entries are read,
   * and of those only the ones under the prefix's whole segments, however many files other
   * agents hold.
   */
  async list(agentPath: string, prefix: string): Promise<{ path: string; size: number }[]> {
    // Its whole segments go into the listing's subject: unbounded, 3 000 of them passed the
    // server's 4 096-byte control line and dropped the host's connection, failing every other
    // agent's calls with it (red-team). No path is longer than a path may be.
    const bytes = Buffer.byteLength(prefix);
    if (bytes > ITX_FILE_PATH_MAX) throw new ItxInputError(`itx.files.list: a prefix of ${bytes} bytes (UTF-8) is over the ${ITX_FILE_PATH_MAX}-byte limit of a path`);
    const whole = prefix.split("/").slice(0, -1);
    // No file's path has an empty segment.
    if (whole.some((s) => s === "")) return [];
    const filter = `${[agentPath.slice(1), ...whole.map(encodeSegment)].join(".")}.>`;
    const listed = await indexedFiles(this.index, filter, (path) => path.startsWith(prefix), ITX_LIST_MAX_ENTRIES);
    if (listed === undefined) throw tooMany("itx.files.list", prefix, "files");
    return [...listed.values()].sort((a, b) => a.path.localeCompare(b.path));
  }
}

type IndexedPath = { path: string; size: number };

/**
 * The files whose index keys match `filter` and whose paths `wanted`, by key, read in one pass: the entries come with their values (one consumer), not keys and then a get per file
 * (10 000 files were 10 000 requests per listing, and a script listing in a loop stalled every
 * tenant's calls). Undefined once more than `most` match: the reading stops there.
 */
async function indexedFiles(index: KV, filter: string, wanted: (path: string) => boolean, most: number): Promise<Map<string, IndexedPath> | undefined> {
  const files = new Map<string, IndexedPath>();
  // The bucket keeps one entry per key (history 1); a later entry of a key replaces an earlier.
  const entries = await index.history({ key: filter });
  for await (const entry of entries) {
    if (isBookkeeping(entry.key)) continue;
    const path = pathOfKey(entry.key);
    if (!wanted(path)) continue;
    const size = entry.operation === "PUT" ? parseIndexedSize(entry.string()) : undefined;
    if (size === undefined) {
      files.delete(entry.key);
      continue;
    }
    files.set(entry.key, { path, size });
    if (files.size > most) {
      entries.stop();
      return undefined;
    }
  }
  return files;
}

/** An index entry's size, or undefined for one that is not an indexed file's. */
function parseIndexedSize(text: string): number | undefined {
  try {
    const size = (JSON.parse(text) as Partial<IndexedFile>).size;
    return typeof size === "number" && Number.isInteger(size) && size >= 0 ? size : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Records a file written to the object store in the index. The entry keeps the object's revision,
 * so two writes of one path indexed out of order leave the later one's size.
 */
export async function indexFile(index: KV, agentPath: string, path: string, info: Pick<ObjectInfo, "size" | "revision">): Promise<void> {
  const key = fileKey(agentPath, path);
  const value = JSON.stringify({ size: info.size, revision: info.revision } satisfies IndexedFile);
  for (let attempt = 1; ; attempt++) {
    const entry = await index.get(key);
    if (entry !== null && entry.operation === "PUT" && (entry.json() as IndexedFile).revision >= info.revision) return;
    try {
      if (entry === null) await index.create(key, value);
      else await index.update(key, value, entry.revision);
      return;
    } catch (error) {
      // Another write of this path was indexed in between: look again.
      if (!isWrongRevision(error) || attempt === 5) throw error;
    }
  }
}

/**
 * Indexes the files written before the index existed, once: the first host to start with an
 * index that lacks the mark lists the object store (every agent's files) and marks it done.
 * Two hosts doing so at once index the same files; `indexFile` keeps the later revision.
 */
export async function backfillFileIndex(store: ObjectStore, index: KV): Promise<number> {
  if ((await index.get(BACKFILLED_KEY))?.operation === "PUT") return 0;
  let indexed = 0;
  for (const info of await store.list()) {
    const colon = info.name.indexOf(":");
    if (info.deleted || colon <= 0) continue;
    await indexFile(index, info.name.slice(0, colon), info.name.slice(colon + 1), info);
    indexed++;
  }
  await index.put(BACKFILLED_KEY, new Date().toISOString());
  return indexed;
}

/** The agent's usage entry: "=" is not in base64url, so no file's key is this. */
function usageKey(agentPath: string): string {
  return `${agentPath.slice(1)}.=usage`;
}

/**
 * Names a new file may not have, though files stored before the rule keep theirs (and are read):
 * a NUL or a line break lists as a name no listing, log or terminal shows right; "." names nothing.
 */
function newFileNameRefusal(path: string): void {
  if (path.split("/").includes(".")) throw new ItxInputError(`itx.files: path ${shownInput(path)} has a "." segment; name the file itself ("notes/a.md")`);
  const control = [...path].find((c) => c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) <= 0x9f));
  if (control !== undefined) {
    throw new ItxInputError(`itx.files: path ${shownInput(path)} has the control character U+${control.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}; file names may not hold control characters`);
  }
}

/** The agent's files write lock ("=" starts no base64url segment, so no file's key is this). */
function writeLockKey(agentPath: string): string {
  return `${agentPath.slice(1)}.=writing`;
}

/** Whether an index key is one of the agent's own bookkeeping keys, not a file's. */
function isBookkeeping(key: string): boolean {
  return key.endsWith(".=usage") || key.endsWith(".=writing");
}

/**
 * A write lock's value: the host holding it, that write's own mark (none in a lock of the version
 * before marks), when it was taken (its clock), and whether `owner` is a host id whose liveness
 * tells when the lock is free (`live`; none in a lock of the versions before).
 */
interface WriteLock {
  readonly owner: string;
  readonly token?: string;
  readonly atMs: number;
  readonly live?: true;
}

/** Locks remembered as seen (a host waits on few at once; the oldest seen goes first). */
const LOCKS_SEEN_KEPT = 10_000;

function keepRecentLock(seen: Map<string, { revision: number; sinceMs: number }>, key: string, value: { revision: number; sinceMs: number }): void {
  seen.delete(key);
  seen.set(key, value);
  if (seen.size > LOCKS_SEEN_KEPT) seen.delete(seen.keys().next().value as string);
}

/** The hosts a files write lock may name: this one, and whether another is gone. */
export interface LockHolders {
  readonly self: string;
  gone(owner: string): Promise<boolean>;
}

/** A write lock's value, or undefined for one that says nothing (taken over at once). */
function parseWriteLock(text: string): WriteLock | undefined {
  try {
    const value = JSON.parse(text) as Partial<WriteLock>;
    if (typeof value.owner !== "string" || typeof value.atMs !== "number") return undefined;
    return {
      owner: value.owner,
      atMs: value.atMs,
      ...(typeof value.token === "string" ? { token: value.token } : {}),
      ...(value.live === true ? { live: true as const } : {}),
    };
  } catch {
    return undefined;
  }
}

function fileKey(agentPath: string, path: string): string {
  return [agentPath.slice(1), ...path.split("/").map(encodeSegment)].join(".");
}

/** The path of an index key: every token after the agent's. */
function pathOfKey(key: string): string {
  return key.split(".").slice(1).map((t) => Buffer.from(t, "base64url").toString("utf8")).join("/");
}

function encodeSegment(segment: string): string {
  return Buffer.from(segment, "utf8").toString("base64url");
}

function tooMany(call: string, prefix: string, what: string): ItxListTooLongError {
  return new ItxListTooLongError(`${call}: more than ${ITX_LIST_MAX_ENTRIES} ${what} start with ${JSON.stringify(prefix)}; list a longer prefix`);
}

function tooLarge(path: unknown, size: number, what: "read" | "write"): ItxInputError {
  return new ItxInputError(`itx.files: "${String(path)}" is ${size} bytes, over the ${ITX_FILE_MAX_BYTES}-byte limit on a file a script may ${what}`);
}
