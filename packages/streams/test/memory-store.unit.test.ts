// The in-memory store passes the same suite as the JetStream store, plus its own clock check.

import { describe, expect, it } from "vitest";
import { MemoryEventStore, fnv1a32 } from "../src/index.ts";
import { describeEventStoreSuite, note } from "./event-store-suite.ts";

describeEventStoreSuite("memory", {
  async newStorage() {
    const store = new MemoryEventStore();
    return { open: async () => store, dispose: () => store.close() };
  },
});

describe("MemoryEventStore", () => {
  it("stamps createdAt from the injected clock", async () => {
    const store = new MemoryEventStore({ now: () => new Date("2026-01-02T03:04:05.000Z") });
    const result = await store.append("/a", [note("x")]);
    expect(result.events[0]?.createdAt).toBe("2026-01-02T03:04:05.000Z");
  });

  it("refuses an event over its configured maxEventBytes, committing nothing", async () => {
    const store = new MemoryEventStore({ maxEventBytes: 1_000 });
    await expect(store.append("/a", [note("fits")])).resolves.toMatchObject({ status: "committed" });
    await expect(store.append("/a", [note("x".repeat(1_000))])).rejects.toMatchObject({ code: "event_too_large", details: { index: 0, maxEventBytes: 1_000 } });
    expect(await store.lastOffset("/a")).toBe(1);
  });

  it("hashes paths with FNV-1a (stable across versions)", () => {
    expect(fnv1a32("")).toBe(0x811c9dc5);
    expect(fnv1a32("a")).toBe(0xe40c292c);
    expect(new MemoryEventStore({ partitionCount: 64 }).partitionOf("/a")).toBe(fnv1a32("/a") % 64);
  });
});
