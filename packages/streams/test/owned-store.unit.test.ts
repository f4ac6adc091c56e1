import { describe, expect, it } from "vitest";
import { ForeignEventTypeError, MemoryEventStore, ownedStore } from "../src/index.ts";

const PATH = "/agents/owned/a";

describe("a service's owned store", () => {
  it("given a foreign type, when the service appends it, then it is refused before anything is stored, and counted", async () => {
    const inner = new MemoryEventStore();
    const refused: string[] = [];
    const gateway = ownedStore(inner, { service: "web-gateway", onRefused: (type) => refused.push(type) });
    const forged = gateway.append(PATH, [
      { type: "agents/context-added", payload: { role: "user", content: "hi" } },
      { type: "agent/llm-request-settled", payload: { requestOffset: 1, result: { status: "succeeded", text: "forged" } } },
    ]);
    await expect(forged).rejects.toBeInstanceOf(ForeignEventTypeError);
    await expect(forged).rejects.toMatchObject({ code: "forbidden", message: expect.stringContaining('web-gateway may not append "agent/llm-request-settled" (events[1])') });
    expect(refused).toEqual(["agent/llm-request-settled"]);
    expect(await inner.lastOffset(PATH)).toBe(0);
  });

  it("given its own type under another service's idempotency key, when appended, then it is refused naming the namespace, and nothing is stored", async () => {
    // A key is a claim: the driver's reply under the reducer's request key for trigger 1 would
    // make the reducer's request for that trigger commit nothing (a duplicate), for ever.
    const inner = new MemoryEventStore();
    const refused: string[] = [];
    const driver = ownedStore(inner, { service: "llm-driver", onRefused: (type) => refused.push(type) });
    const squat = driver.append(PATH, [{ type: "agents/context-added", payload: { role: "assistant", content: "x", llmRequestOffset: 1 }, idempotencyKey: "agent/request/1" }]);
    await expect(squat).rejects.toMatchObject({
      code: "forbidden",
      message: 'llm-driver may not append this: events[0].idempotencyKey "agent/request/1" is in the namespace "agent/request/" reserved for agent-reducer; llm-driver does not build it. Nothing was appended.',
    });
    expect(refused).toEqual(["agents/context-added"]);
    expect(await inner.lastOffset(PATH)).toBe(0);
    // Its own namespace, and one shared with the reducer, are its to use (a settlement's batch)
    const settlement = driver.append(PATH, [
      { type: "agents/context-added", payload: { role: "assistant", content: "x", llmRequestOffset: 1 }, idempotencyKey: "agent/assistant-context@1" },
      { type: "agent/llm-request-settled", payload: { requestOffset: 1, result: { status: "succeeded", text: "x" } }, idempotencyKey: "agent/settle/1" },
    ]);
    await expect(settlement).resolves.toMatchObject({ status: "committed" });
  });

  it("given its own types (also spelled as URIs), when appended, then they commit and reads pass through", async () => {
    const inner = new MemoryEventStore();
    const driver = ownedStore(inner, { service: "llm-driver" });
    await expect(driver.append(PATH, [{ type: "capability-host/script-run-settled", payload: { executionId: "e", settlement: { status: "succeeded", result: 1 } } }])).rejects.toThrow(
      /llm-driver may not append "capability-host\/script-run-settled"/,
    );
    await expect(driver.append(PATH, [{ type: "events.iterate.com/agent/token-usage-reported", payload: {} }])).rejects.not.toBeInstanceOf(ForeignEventTypeError);
    const ok = await driver.append(PATH, [{ type: "stream/error-occurred", payload: { message: "m" } }]);
    expect(ok.status).toBe("committed");
    expect((await driver.read(PATH)).map((e) => e.type)).toEqual(["stream/error-occurred"]);
    expect(driver.partitionOf(PATH)).toBe(inner.partitionOf(PATH));
  });
});
