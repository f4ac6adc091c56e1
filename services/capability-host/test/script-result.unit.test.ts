// itx.capabilityHost.getScriptResult finds a settlement by its key: one index look-up and one
// record, never a read of the agent's stream (which, read whole on every call, ran the host out of
// memory with a few parallel calls on a stream of 200 MB).
import { type ReadOptions, MemoryEventStore } from "@agentrt/streams";
import type { AgentEvent } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { createHostCallHandler, type ItxHostDeps } from "../src/itx/host-calls.ts";

class ReadCountingStore extends MemoryEventStore {
  reads = 0;
  override async read(streamPath: string, options?: ReadOptions): Promise<AgentEvent[]> {
    this.reads++;
    return super.read(streamPath, options);
  }
}

describe("getScriptResult", () => {
  it("given a long stream with a settled script, when its result is asked for, and one never run, then both answer without reading the stream", async () => {
    const store = new ReadCountingStore();
    const path = "/agents/results/a";
    await store.append(path, [{ type: "agent/created", payload: {} }]);
    for (let i = 0; i < 300; i++) await store.append(path, [{ type: "agents/context-added", payload: { role: "user", content: `${i}:${"x".repeat(1_000)}` } }]);
    const settlement = { status: "succeeded" as const, result: { n: 42 } };
    await store.append(path, [{ type: "capability-host/script-run-settled", payload: { executionId: "run-1", settlement }, idempotencyKey: "capability-host/script-run-settled@run-1" }]);
    // Only the store is used for a settlement that was not spilled to a file.
    const deps = { store } as unknown as ItxHostDeps;
    const call = createHostCallHandler(deps, { agentPath: path, executionId: "caller" });
    store.reads = 0;
    expect(await call("capabilityHost.getScriptResult", ["run-1"])).toEqual(settlement);
    expect(await call("capabilityHost.getScriptResult", ["never-ran"])).toBeNull();
    expect(store.reads).toBe(0);
  });
});

describe("files.bytes", () => {
  it("given a 1 MB file, when a script reads its bytes, then the answer crossing to the sandbox is base64 (4/3 of it), not an array of numbers", async () => {
    const content = Uint8Array.from({ length: 1_000_000 }, (_, i) => (i * 31) % 256);
    const deps = { files: { bytes: async () => content } } as unknown as ItxHostDeps;
    const call = createHostCallHandler(deps, { agentPath: "/agents/results/files", executionId: "caller" });
    const answer = (await call("files.bytes", ["big.bin"])) as { __base64: string };
    expect(Buffer.from(answer.__base64, "base64").equals(Buffer.from(content))).toBe(true);
    // As an array of numbers it was 3.5 MB of JSON here, held with the array itself, several reads at once.
    expect(JSON.stringify(answer).length).toBeLessThan(1_340_000);
  });
});
