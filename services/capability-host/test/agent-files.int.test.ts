// An agent's workspace files (itx.files) are listed from an index keyed by agent: listing reads
// this agent's entries only, however many files other agents hold (the object store's own
// listing reads every agent's). An agent's files are held to a quota of bytes and files, so one
// agent's scripts cannot fill the shared store. Given/when/then against a real nats-server.

import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { Kvm, type KV } from "@nats-io/kv";
import { jetstreamManager } from "@nats-io/jetstream";
import { Objm, type ObjectStore } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AgentFiles,
  AgentKv,
  backfillFileIndex,
  indexFile,
  ITX_FILE_PATH_MAX,
  ITX_KV_KEY_MAX,
  ITX_LIST_MAX_ENTRIES,
} from "../src/itx/agent-storage.ts";
import type { Quota } from "../src/itx/usage-meter.ts";

let server: NatsServer;
let nc: NatsConnection;
let bucket = 0;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

/** A fresh object store and index (so each case starts from nothing). */
async function storage(quota?: Quota): Promise<{ store: ObjectStore; index: KV; files: AgentFiles }> {
  bucket++;
  const store = await new Objm(nc).create(`files_${bucket}`);
  const index = await new Kvm(nc).create(`files_index_${bucket}`, { history: 1 });
  return { store, index, files: new AgentFiles(store, index, quota) };
}

const text = (s: string) => new TextEncoder().encode(s);

async function inBatches<T>(items: T[], each: (item: T) => Promise<unknown>, size = 500): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(each));
}

describe("itx.files listing", () => {
  it("reads only the listing agent's index entries: another agent's 1 500 files add nothing to what the host receives", async () => {
    // Given an agent with 3 files and another with 1 500
    const { store, files } = await storage();
    for (const p of ["a.md", "notes/b.md", "notes/c.md"]) await files.write("/agents/mine", p, text(p));
    await inBatches(Array.from({ length: 1_500 }, (_, i) => `f/${i}.txt`), (p) => files.write("/agents/noisy", p, text("x")), 100);
    // When the first lists its files
    const before = nc.stats().inBytes;
    const listed = await files.list("/agents/mine", "");
    const read = nc.stats().inBytes - before;
    // Then it gets its own three, having received a few kilobytes
    expect(listed).toEqual([
      { path: "a.md", size: 4 },
      { path: "notes/b.md", size: 10 },
      { path: "notes/c.md", size: 10 },
    ]);
    expect(read).toBeLessThan(8_000);
    // (where the object store's own listing, which the host used before, receives every agent's entries)
    const whole = nc.stats().inBytes;
    expect((await store.list()).length).toBe(1_503);
    expect(nc.stats().inBytes - whole).toBeGreaterThan(300_000);
    // And the other agent's listing is whole
    expect((await files.list("/agents/noisy", "f/")).length).toBe(1_500);
  }, 60_000);

  it("lists 2 000 files in one pass: the sizes come with the keys, not one request per file", async () => {
    // Given an agent with 2 000 indexed files
    const { index, files } = await storage();
    await inBatches(Array.from({ length: 2_000 }, (_, i) => `f/${i}.txt`), (p) => indexFile(index, "/agents/many", p, { size: 7, revision: 1 }));
    // When it lists them
    const before = nc.stats().outMsgs;
    const listed = await files.list("/agents/many", "");
    const sent = nc.stats().outMsgs - before;
    // Then every file is there with its size, for a few requests (a listing then a get per file sent over 2 000)
    expect(listed).toHaveLength(2_000);
    expect(listed.every((f) => f.size === 7)).toBe(true);
    expect(sent).toBeLessThan(20);
  }, 60_000);

  it("lists by prefix, within the agent only: not a sub-agent's files, nor a sibling's whose path starts the same", async () => {
    const { files } = await storage();
    const mine = ["notes/a.md", "notes/b/c.md", "notesx.md", "todo.md", "ünï/ß.md"];
    for (const p of mine) await files.write("/agents/a", p, text(p));
    await files.write("/agents/a/sub", "notes/sub.md", text("sub"));
    await files.write("/agents/ab", "notes/ab.md", text("ab"));
    const paths = async (prefix: string) => (await files.list("/agents/a", prefix)).map((f) => f.path);
    expect(await paths("")).toEqual([...mine].sort((x, y) => x.localeCompare(y)));
    expect(await paths("notes/")).toEqual(["notes/a.md", "notes/b/c.md"]);
    expect(await paths("notes")).toEqual(["notes/a.md", "notes/b/c.md", "notesx.md"]);
    expect(await paths("notes/b")).toEqual(["notes/b/c.md"]);
    expect(await paths("ünï/")).toEqual(["ünï/ß.md"]);
    // A prefix no path can have lists nothing
    expect(await paths("/notes")).toEqual([]);
    expect(await paths("notes//")).toEqual([]);
    expect(await paths("missing/")).toEqual([]);
  });

  it("lists a rewritten file at its last size, even when two writes are indexed out of order", async () => {
    const { store, index, files } = await storage();
    await files.write("/agents/a", "f.txt", text("one"));
    const second = await store.putBlob({ name: "/agents/a:f.txt" }, text("second version"));
    const third = await store.putBlob({ name: "/agents/a:f.txt" }, text("3rd"));
    // When the later write is indexed before the earlier one
    await indexFile(index, "/agents/a", "f.txt", third);
    await indexFile(index, "/agents/a", "f.txt", second);
    // Then the listing keeps the later one's size
    expect(await files.list("/agents/a", "")).toEqual([{ path: "f.txt", size: 3 }]);
    await files.write("/agents/a", "f.txt", text("four"));
    expect(await files.list("/agents/a", "")).toEqual([{ path: "f.txt", size: 4 }]);
  });

  it("indexes the files written before the index existed, once", async () => {
    // Given files in the object store that no index has seen
    const { store, index, files } = await storage();
    await store.putBlob({ name: "/agents/old:notes/a.md" }, text("aaa"));
    await store.putBlob({ name: "/agents/old:b.md" }, text("bb"));
    await store.putBlob({ name: "/agents/other:c.md" }, text("c"));
    expect(await files.list("/agents/old", "")).toEqual([]);
    // When a host starts with that index
    expect(await backfillFileIndex(store, index)).toBe(3);
    // Then they are listed, and a later start does not list the object store again
    expect(await files.list("/agents/old", "")).toEqual([
      { path: "b.md", size: 2 },
      { path: "notes/a.md", size: 3 },
    ]);
    expect(await backfillFileIndex(store, index)).toBe(0);
  });

  it("refuses a path over the length limit, naming it, and writes nothing", async () => {
    const { store, files } = await storage();
    const long = "d/".repeat(ITX_FILE_PATH_MAX / 2) + "f";
    await expect(files.write("/agents/a", long, text("x"))).rejects.toThrow(`a path of ${long.length} bytes (UTF-8) is over the ${ITX_FILE_PATH_MAX}-byte limit`);
    // Counted in bytes: 1 000 "€" are 3 000 bytes, an index key of 4 000 (past NATS's 4 096-byte control line with its subject).
    await expect(files.write("/agents/a", "€".repeat(1_000), text("x"))).rejects.toThrow(`a path of 3000 bytes (UTF-8) is over the ${ITX_FILE_PATH_MAX}-byte limit`);
    await expect(files.bytes("/agents/a", "€".repeat(1_000))).rejects.toThrow("-byte limit");
    // Names beyond Latin-1 are refused naming the character, not failed deep in the object store's client.
    await expect(files.write("/agents/a", "日本.txt", text("x"))).rejects.toThrow('path "日本.txt" has "日"; file names may use Latin-1 characters only');
    await expect(files.write("/agents/a", "notes/😀.md", text("x"))).rejects.toThrow('has "😀"');
    // Control characters and "." segments are no new file's name either (one stored before is still read).
    await expect(files.write("/agents/a", "a\u0000b", text("x"))).rejects.toThrow("has the control character U+0000; file names may not hold control characters");
    await expect(files.write("/agents/a", "c\nd", text("x"))).rejects.toThrow("has the control character U+000A");
    await expect(files.write("/agents/a", "e\u0085f", text("x"))).rejects.toThrow("has the control character U+0085");
    await expect(files.write("/agents/a", ".", text("x"))).rejects.toThrow('itx.files: path "." has a "." segment; name the file itself ("notes/a.md")');
    await expect(files.write("/agents/a", "notes/./a.md", text("x"))).rejects.toThrow('has a "." segment');
    expect(await store.list()).toEqual([]);
    const { store: older, index: olderIndex, files: olderFiles } = await storage();
    await indexFile(olderIndex, "/agents/a", "c\nd", await older.putBlob({ name: "/agents/a:c\nd" }, text("kept")));
    expect(new TextDecoder().decode(await olderFiles.bytes("/agents/a", "c\nd"))).toBe("kept");
    await files.write("/agents/a", "é.txt", text("x"));
    expect(new TextDecoder().decode(await files.bytes("/agents/a", "é.txt"))).toBe("x");
  });

  it("refuses a listing prefix longer than a path at once, naming the limit, and the connection stays up", async () => {
    const { files } = await storage();
    await files.write("/agents/lister", "a/b.txt", text("x"));
    const before = nc.stats();
    const startedAt = Date.now();
    await expect(files.list("/agents/lister", "a/".repeat(3_000))).rejects.toThrow(`itx.files.list: a prefix of 6000 bytes (UTF-8) is over the ${ITX_FILE_PATH_MAX}-byte limit of a path`);
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    // Nothing was sent for it, and the next listing is answered on the same connection.
    expect(nc.stats().outMsgs).toBe(before.outMsgs);
    expect(await files.list("/agents/lister", "a/")).toEqual([{ path: "a/b.txt", size: 1 }]);
    expect(nc.isClosed()).toBe(false);
  });

  it("refuses a KV key over its length limit or with an empty segment, naming the rule, before any NATS call", async () => {
    bucket++;
    const raw = await new Kvm(nc).create(`agent_kv_keys_${bucket}`, { history: 1 });
    const kv = new AgentKv(raw);
    await expect(kv.get("/agents/a", "a".repeat(5_000))).rejects.toThrow(`itx.kv: a key of 5000 characters is over the ${ITX_KV_KEY_MAX}-character limit`);
    await expect(kv.set("/agents/a", "a".repeat(ITX_KV_KEY_MAX + 1), 1)).rejects.toThrow("-character limit");
    await expect(kv.set("/agents/a", "a..b", 1)).rejects.toThrow('no "..")');
    // The longest key works, and the connection is as it was.
    await kv.set("/agents/a", "k".repeat(ITX_KV_KEY_MAX), 1);
    expect(await kv.get("/agents/a", "k".repeat(ITX_KV_KEY_MAX))).toBe(1);
    expect(await raw.get("agents/a.other")).toBeNull();
  });

  it(`answers a listing of more than ${ITX_LIST_MAX_ENTRIES} entries with an error asking for a longer prefix`, async () => {
    const { index, files } = await storage();
    await inBatches(Array.from({ length: ITX_LIST_MAX_ENTRIES + 1 }, (_, i) => i), (i) => indexFile(index, "/agents/many", `d/${i}`, { size: 1, revision: i + 1 }));
    await indexFile(index, "/agents/many", "e/one", { size: 1, revision: 1 });
    await expect(files.list("/agents/many", "")).rejects.toThrow(`itx.files.list: more than ${ITX_LIST_MAX_ENTRIES} files start with ""; list a longer prefix`);
    expect(await files.list("/agents/many", "e/")).toEqual([{ path: "e/one", size: 1 }]);
  }, 60_000);
});

describe("itx.kv listing", () => {
  it(`answers a listing of more than ${ITX_LIST_MAX_ENTRIES} keys with an error asking for a longer prefix`, async () => {
    // (Set before quotas, or under a quota an operator raised past the listing's bound.)
    const raw = await new Kvm(nc).create("agent_kv_many", { history: 1 });
    const kv = new AgentKv(raw);
    await inBatches(Array.from({ length: ITX_LIST_MAX_ENTRIES + 1 }, (_, i) => i), (i) => raw.put(`agents/many.d.${i}`, String(i)));
    await raw.put("agents/many.e.one", "1");
    await expect(kv.list("/agents/many", "")).rejects.toThrow(`itx.kv.list: more than ${ITX_LIST_MAX_ENTRIES} keys start with ""; list a longer prefix`);
    expect(await kv.list("/agents/many", "e.")).toEqual(["e.one"]);
  }, 60_000);
});

describe("itx.files quota", () => {
  const kb = (n: number) => new Uint8Array(n * 1_000).fill(97);

  it("refuses a write that would take the agent past its bytes, naming the usage and the quota, and stores nothing", async () => {
    // Given an agent holding 6 kB of a 10 kB quota
    const { store, files } = await storage({ bytes: 10_000, entries: 100 });
    await files.write("/agents/a", "one.bin", kb(6));
    // When it writes 6 kB more
    await expect(files.write("/agents/a", "two.bin", kb(6))).rejects.toThrow(
      'itx.files: writing "two.bin" (6000 bytes) would take this agent\'s workspace to 12000 bytes in 2 files, over its quota of 10000 bytes and 100 files',
    );
    // Then nothing was stored or listed
    expect(await store.info("/agents/a:two.bin")).toBeNull();
    expect((await files.list("/agents/a", "")).map((f) => f.path)).toEqual(["one.bin"]);
    // And rewriting its file counts only the difference; another agent has a quota of its own
    await files.write("/agents/a", "one.bin", kb(9));
    await files.write("/agents/a", "small.bin", kb(1));
    await expect(files.write("/agents/a", "more.bin", kb(1))).rejects.toThrow("over its quota");
    await files.write("/agents/b", "two.bin", kb(6));
  });

  it("refuses a file past the agent's count, and takes rewrites of the files it has", async () => {
    const { files } = await storage({ bytes: 1_000_000, entries: 3 });
    for (const p of ["a", "b", "c"]) await files.write("/agents/a", p, kb(1));
    await expect(files.write("/agents/a", "d", kb(1))).rejects.toThrow("in 4 files, over its quota of 1000000 bytes and 3 files");
    await files.write("/agents/a", "b", kb(2));
    expect(await files.list("/agents/a", "")).toEqual([
      { path: "a", size: 1_000 },
      { path: "b", size: 2_000 },
      { path: "c", size: 1_000 },
    ]);
  });

  it("lets exactly as many of 10 writes at once succeed as the quota holds", async () => {
    const { files } = await storage({ bytes: 5_000, entries: 100 });
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => files.write("/agents/a", `f${i}`, kb(1))));
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(5);
    expect(await files.list("/agents/a", "")).toHaveLength(5);
  });

  it("counts the files written before quotas, and a count left high by a write that failed half-way refuses nothing it should take", async () => {
    // Given 8 kB written before the index and quotas, indexed by a host's first start
    const { store, index, files } = await storage({ bytes: 10_000, entries: 100 });
    await store.putBlob({ name: "/agents/a:old.bin" }, kb(8));
    await backfillFileIndex(store, index);
    // Then the agent's first write is counted against them
    await expect(files.write("/agents/a", "new.bin", kb(3))).rejects.toThrow("to 11000 bytes in 2 files");
    await files.write("/agents/a", "new.bin", kb(2));
    // And given 7 kB held, and a count left high (as by a host killed between counting and storing)
    await files.write("/agents/a", "old.bin", kb(5));
    await index.put("agents/a.=usage", JSON.stringify({ bytes: 9_900, entries: 2 }));
    // Then a write the files have room for is taken
    await files.write("/agents/a", "third.bin", kb(2));
    expect((await files.list("/agents/a", "")).map((f) => f.size)).toEqual([2_000, 5_000, 2_000]);
    await expect(files.write("/agents/a", "fourth.bin", kb(2))).rejects.toThrow("to 11000 bytes in 4 files");
  });
});

describe("itx.kv quota", () => {
  async function kvWith(quota: Quota): Promise<{ raw: KV; kv: AgentKv }> {
    bucket++;
    const raw = await new Kvm(nc).create(`agent_kv_quota_${bucket}`, { history: 1 });
    return { raw, kv: new AgentKv(raw, quota) };
  }

  it("refuses a value that would take the agent past its bytes or its keys, naming the usage and the quota, and stores nothing", async () => {
    // Given an agent with a 100-byte value under a quota of 150 bytes in 2 keys
    const { kv } = await kvWith({ bytes: 150, entries: 2 });
    await kv.set("/agents/a", "one", "x".repeat(98));
    // When it sets another 100 bytes, then a third key
    await expect(kv.set("/agents/a", "two", "y".repeat(98))).rejects.toThrow(
      'itx.kv: setting "two" (100 bytes) would take this agent\'s keys to 200 bytes in 2 keys, over its quota of 150 bytes and 2 keys',
    );
    expect(await kv.get("/agents/a", "two")).toBeNull();
    await kv.set("/agents/a", "two", "small");
    await expect(kv.set("/agents/a", "three", 1)).rejects.toThrow("in 3 keys, over its quota of 150 bytes and 2 keys");
    // Then overwriting counts the difference, deleting gives room back, and another agent has its own quota
    await kv.set("/agents/a", "one", "shorter");
    await kv.delete("/agents/a", "two");
    await kv.set("/agents/a", "three", "x".repeat(100));
    expect(await kv.list("/agents/a", "")).toEqual(["one", "three"]);
    await kv.set("/agents/b", "one", "x".repeat(140));
  });

  it("counts an agent's 2 000 keys in one pass: their sizes come with them, not one request per key", async () => {
    // Given 2 000 keys set before quotas (no usage counted yet)
    const { raw, kv } = await kvWith({ bytes: 1_000_000, entries: 10_000 });
    await inBatches(Array.from({ length: 2_000 }, (_, i) => i), (i) => raw.put(`agents/counted.k${i}`, "12345"));
    // When a set has the agent's usage counted afresh
    const before = nc.stats().outMsgs;
    await kv.set("/agents/counted", "one-more", 1);
    const sent = nc.stats().outMsgs - before;
    // Then it counted every key's bytes, for a few requests (the keys then a get per key sent over 2 000)
    expect(sent).toBeLessThan(30);
    // (2 000 × 5 bytes and "1": a value of 1 000 002 bytes of JSON takes it to 1 010 003 in 2 002 keys)
    await expect(kv.set("/agents/counted", "too-big", "x".repeat(1_000_000))).rejects.toThrow(/would take this agent's keys to 1010003 bytes in 2002 keys/);
  });

  it("lets exactly as many of 10 sets at once succeed as the quota holds, and counts keys set before quotas", async () => {
    const { raw, kv } = await kvWith({ bytes: 1_000_000, entries: 5 });
    await raw.put("agents/old.before", JSON.stringify("set before quotas"));
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => kv.set("/agents/old", `k${i}`, i)));
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(4);
    expect(await kv.list("/agents/old", "")).toHaveLength(5);
  });
});


describe("itx.files written from two hosts at once", () => {
  /** The object store's chunk subjects that no file's metadata names: stored bytes nothing reads or counts. */
  async function orphanedChunks(store: ObjectStore, bucketName: string): Promise<string[]> {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(`OBJ_${bucketName}`, { subjects_filter: `$O.${bucketName}.C.>` });
    const named = new Set<string>();
    for await (const entry of await store.list()) named.add(`$O.${bucketName}.C.${entry.nuid}`);
    return Object.keys(info.state.subjects ?? {}).filter((subject) => !named.has(subject));
  }

  it("leaves no chunk of a replaced file behind when two hosts rewrite one agent's file at the same time", async () => {
    // Given two hosts, each with its own connection, sharing the store and the index
    bucket++;
    const name = `files_${bucket}`;
    const other = await connect({ servers: server.url });
    try {
      const store = await new Objm(nc).create(name);
      const index = await new Kvm(nc).create(`files_index_${bucket}`, { history: 1 });
      const hostA = new AgentFiles(store, index);
      const hostB = new AgentFiles(await new Objm(other).open(name), await new Kvm(other).open(`files_index_${bucket}`));
      // When both rewrite the same file over and over, at once
      for (let round = 0; round < 20; round++) {
        await Promise.all([hostA.write("/agents/twice", "shared.bin", new Uint8Array(1_000).fill(round)), hostB.write("/agents/twice", "shared.bin", new Uint8Array(2_000).fill(round))]);
      }
      // Then only the last version's chunks are stored, and the file is one of the two last writes
      expect(await orphanedChunks(store, name)).toEqual([]);
      const last = await hostA.bytes("/agents/twice", "shared.bin");
      expect([1_000, 2_000]).toContain(last.length);
      expect(await hostA.list("/agents/twice", "")).toEqual([{ path: "shared.bin", size: last.length }]);
    } finally {
      await other.close();
    }
  });

  it("takes over the lock of a host that died mid-write, and fails a write behind a live one after the wait, storing nothing", async () => {
    // Given a lock left by a host that died holding it, and one a live host holds
    const { store, index } = await storage();
    const files = new AgentFiles(store, index, undefined, { waitMs: 300, staleMs: 5_000 });
    await index.put("agents/dead.=writing", JSON.stringify({ owner: "gone", token: "t1", atMs: Date.now() - 6_000 }));
    await index.put("agents/busy.=writing", JSON.stringify({ owner: "alive", token: "t2", atMs: Date.now() }));
    // (and one a host of the version before marks holds: no token, still respected)
    await index.put("agents/older.=writing", JSON.stringify({ owner: "older-host", atMs: Date.now() }));
    // When each agent's file is written
    const written = await files.write("/agents/dead", "a.txt", text("after the takeover"));
    const refused = await files.write("/agents/busy", "a.txt", text("behind a live writer")).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    // Then the dead host's lock is taken over; the live one's holds, and the write fails saying so
    expect(written).toEqual({ path: "a.txt", size: 18 });
    expect(new TextDecoder().decode(await files.bytes("/agents/dead", "a.txt"))).toBe("after the takeover");
    expect(refused?.message).toBe("itx.files: another script has been writing this agent's files for over 0.3 s; try the write again");
    await expect(files.write("/agents/older", "a.txt", text("behind an older host"))).rejects.toThrow("another script has been writing this agent's files");
    expect(await files.list("/agents/busy", "")).toEqual([]);
    expect(await store.info("/agents/busy:a.txt")).toBeNull();
    // And the lock is not a file: neither listed nor counted
    expect(await files.list("/agents/dead", "")).toEqual([{ path: "a.txt", size: 18 }]);
    await index.delete("agents/busy.=writing");
    expect(await files.write("/agents/busy", "a.txt", text("now"))).toEqual({ path: "a.txt", size: 3 });
  });

  it("judges a lock naming a host with liveness by that host's liveness, never by the clock it stamped", async () => {
    // Given hosts with liveness: one live whose clock runs two minutes behind (its stamp looks
    // stale to this host), one gone whose stamp is from just now
    const { store, index } = await storage();
    const live = new Set(["host-live"]);
    const asked: string[] = [];
    const holders = { self: "host-self", gone: async (owner: string) => (asked.push(owner), !live.has(owner)) };
    const files = new AgentFiles(store, index, undefined, { waitMs: 300, staleMs: 5_000 }, holders);
    await index.put("agents/behind.=writing", JSON.stringify({ owner: "host-live", token: "t1", atMs: Date.now() - 120_000, live: true }));
    await index.put("agents/died.=writing", JSON.stringify({ owner: "host-dead", token: "t2", atMs: Date.now(), live: true }));
    // When each agent's file is written
    const refused = await files.write("/agents/behind", "a.txt", text("x")).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    const written = await files.write("/agents/died", "a.txt", text("after the takeover"));
    // Then the live host's lock holds although its stamp is old; the gone host's is taken at once
    expect(refused?.message).toBe("itx.files: another script has been writing this agent's files for over 0.3 s; try the write again");
    expect(written).toEqual({ path: "a.txt", size: 18 });
    expect(asked).toContain("host-live");
    expect(asked).toContain("host-dead");
    // And the locks this host takes name it as a host with liveness, for the others to judge
    const locks: unknown[] = [];
    const recording = new Proxy(index, {
      get(target, property, receiver) {
        if (property === "create") {
          return async (key: string, value: string) => {
            if (key.endsWith(".=writing")) locks.push(JSON.parse(value));
            return await target.create(key, value);
          };
        }
        const member = Reflect.get(target, property, receiver) as unknown;
        return typeof member === "function" ? (member as (...args: unknown[]) => unknown).bind(target) : member;
      },
    });
    await new AgentFiles(store, recording, undefined, { waitMs: 300, staleMs: 5_000 }, holders).write("/agents/mine", "b.txt", text("y"));
    expect(locks).toEqual([{ owner: "host-self", token: expect.any(String), atMs: expect.any(Number), live: true }]);
    live.delete("host-live");
    expect(await files.write("/agents/behind", "a.txt", text("now"))).toEqual({ path: "a.txt", size: 3 });
  });

  it("takes a live host's lock once this host has seen it unchanged for the stale time (its release failed)", async () => {
    // Review: a lock judged by liveness alone stayed for as long as its host lived
    const { store, index } = await storage();
    const holders = { self: "host-self", gone: async () => false };
    const files = new AgentFiles(store, index, undefined, { waitMs: 300, staleMs: 600 }, holders);
    await index.put("agents/left.=writing", JSON.stringify({ owner: "host-live", token: "t1", atMs: Date.now(), live: true }));
    await expect(files.write("/agents/left", "a.txt", text("x"))).rejects.toThrow("another script has been writing this agent's files");
    await new Promise((resolve) => setTimeout(resolve, 400));
    // Seen unchanged for over 600 ms by now: taken
    expect(await files.write("/agents/left", "a.txt", text("after"))).toEqual({ path: "a.txt", size: 5 });
    // A lock that moved meanwhile (its holder wrote again) is seen afresh
    await index.put("agents/moving.=writing", JSON.stringify({ owner: "host-live", token: "t2", atMs: Date.now(), live: true }));
    await expect(files.write("/agents/moving", "a.txt", text("x"))).rejects.toThrow("another script has been writing this agent's files");
    await index.put("agents/moving.=writing", JSON.stringify({ owner: "host-live", token: "t3", atMs: Date.now(), live: true }));
    await new Promise((resolve) => setTimeout(resolve, 400));
    await expect(files.write("/agents/moving", "a.txt", text("x"))).rejects.toThrow("another script has been writing this agent's files");
  });

  it("holds a lock whose take landed but went unanswered, and gives one back whose release failed, so no write waits on it", async () => {
    // Given an index whose first lock take lands and then fails as a timeout, and whose first release fails
    const { store, index } = await storage();
    let loseCreate = true;
    let failDelete = true;
    const lossy = new Proxy(index, {
      get(target, property, receiver) {
        if (property === "create") {
          return async (key: string, value: string) => {
            const revision = await target.create(key, value);
            if (loseCreate && key.endsWith(".=writing")) {
              loseCreate = false;
              throw Object.assign(new Error("TIMEOUT"), { name: "TimeoutError" });
            }
            return revision;
          };
        }
        if (property === "delete") {
          return async (key: string, options?: { previousSeq?: number }) => {
            if (failDelete && key.endsWith(".=writing")) {
              failDelete = false;
              throw Object.assign(new Error("TIMEOUT"), { name: "TimeoutError" });
            }
            return target.delete(key, options);
          };
        }
        const member = Reflect.get(target, property, receiver) as unknown;
        return typeof member === "function" ? (member as (...args: unknown[]) => unknown).bind(target) : member;
      },
    });
    const files = new AgentFiles(store, lossy, undefined, { waitMs: 300, staleMs: 60_000 });
    // When the agent's file is written twice
    expect(await files.write("/agents/lossy", "x.txt", text("one"))).toEqual({ path: "x.txt", size: 3 });
    expect(await files.write("/agents/lossy", "x.txt", text("two"))).toEqual({ path: "x.txt", size: 3 });
    // Then both were written and no lock is left behind
    expect(new TextDecoder().decode(await files.bytes("/agents/lossy", "x.txt"))).toBe("two");
    const lock = await index.get("agents/lossy.=writing");
    expect(lock === null || lock.operation !== "PUT").toBe(true);
  });
});
