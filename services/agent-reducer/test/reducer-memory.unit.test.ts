// The reducer shell on the in-memory store: the same PartitionWorker and StreamProcessor the
// service runs, with effects that append to the memory store and record hand-offs.

import { type AgentEvent, AgentRuntimeError, type EventInput, type PayloadOf } from "@agentrt/contract";
import { MemoryEventStore } from "@agentrt/streams";
import { collectUntil, testLogger, waitFor } from "@agentrt/testing";
import { afterEach, describe, expect, it } from "vitest";
import type { HeadAppendResult, ReducerEffects } from "../src/effects.ts";
import { PartitionWorker } from "../src/partition-worker.ts";
import { memorySnapshotStore } from "../src/snapshots.ts";

const logger = testLogger("test");
const PATH = "/agents/test/reducer";

function memoryEffects(store: MemoryEventStore, options: { partialText?: string; now?: () => number } = {}) {
  const llmWork: number[] = [];
  const scriptWork: string[] = [];
  const interrupts: number[] = [];
  const runtimes: PayloadOf<"agent/runtime-changed">[] = [];
  const effects: ReducerEffects = {
    now: options.now ?? Date.now,
    append: (path, batch) => store.append(path, batch),
    appendAtHead: async (path, batch, expectedLastOffset): Promise<HeadAppendResult> => {
      try {
        const result = await store.append(path, batch, { expectedLastOffset });
        return result.status === "committed" ? result : { status: result.status, events: [] };
      } catch (error) {
        if ((error as { code?: string }).code === "conflict") return { status: "conflict", events: [] };
        throw error;
      }
    },
    publishLlmWork: async (_path, offset) => void llmWork.push(offset),
    publishScriptWork: async (_path, _offset, id) => void scriptWork.push(id),
    interruptDriver: async (_path, offset) => {
      interrupts.push(offset);
      return options.partialText;
    },
    publishRuntime: async (_path, payload) => void runtimes.push(payload),
    publishPreviews: async (path, deltas, foldedOffset) => void (await store.append(path, deltas, { knownLastOffset: foldedOffset })),
  };
  return { effects, llmWork, scriptWork, interrupts, runtimes };
}

const born = (debounceMs: number): EventInput[] => [
  { type: "agent/created", payload: {} },
  { type: "agent/configured", payload: { config: { llmRequestDebounceMs: debounceMs } } },
];
const userSays = (content: string, behaviour?: "interrupt-current-request"): EventInput => ({
  type: "agents/context-added",
  payload: {
    role: "user",
    content,
    actor: { type: "user", origin: "web" },
    ...(behaviour ? { llmRequestPolicy: { behaviour } } : {}),
  },
});

const workers: PartitionWorker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.stop();
});

async function startWorker(store: MemoryEventStore, effects: ReducerEffects, snapshots = memorySnapshotStore(), snapshotEveryEvents = 10_000) {
  const worker = new PartitionWorker({ partition: store.partitionOf(PATH), store, snapshots, effects, logger, retention: { snapshotEveryEvents } });
  workers.push(worker);
  await worker.start();
  return worker;
}

const ofType = (events: AgentEvent[], type: string) => events.filter((e) => e.type === type);

describe("the reducer shell", () => {
  it("appends one debounced request for two quick messages and hands it to a driver", async () => {
    const store = new MemoryEventStore();
    const { effects, llmWork } = memoryEffects(store);
    await startWorker(store, effects);
    await store.append(PATH, born(150));
    await store.append(PATH, [userSays("one")]);
    await store.append(PATH, [userSays("two")]);
    await waitFor(async () => ofType(await store.read(PATH), "agent/llm-request-requested").length === 1, { timeoutMs: 5000 });
    const events = await store.read(PATH);
    const request = ofType(events, "agent/llm-request-requested")[0]!;
    expect(request.idempotencyKey).toBe("agent/request/4");
    // Debounced from the newest trigger, not the first.
    expect(Date.parse(request.createdAt) - Date.parse(events[3]!.createdAt)).toBeGreaterThanOrEqual(150);
    await waitFor(() => llmWork.includes(request.offset), { timeoutMs: 2000 });
  });

  it("hands a request to the drivers while its append is in flight, naming the offset it commits at", async () => {
    const store = new MemoryEventStore();
    const { effects, llmWork } = memoryEffects(store);
    const order: string[] = [];
    const appendAtHead = effects.appendAtHead;
    effects.appendAtHead = async (path, batch, expected) => {
      order.push("append started");
      // The store answers only once the work item is out: the old order (append, then publish) never gets here.
      await waitFor(() => llmWork.length > 0, { timeoutMs: 2000, what: "the work item before the append's answer" });
      const outcome = await appendAtHead(path, batch, expected);
      order.push(`append ${outcome.status}`);
      return outcome;
    };
    await startWorker(store, effects);
    await store.append(PATH, born(0));
    await store.append(PATH, [userSays("hi")]);
    await waitFor(async () => ofType(await store.read(PATH), "agent/llm-request-requested").length === 1, { timeoutMs: 5000 });
    const request = ofType(await store.read(PATH), "agent/llm-request-requested")[0]!;
    expect(order).toEqual(["append started", "append committed"]);
    expect(llmWork).toEqual([request.offset]);
  });

  it("given a request append that loses to another event, its early work item names that event and the request is handed over where it lands", async () => {
    const store = new MemoryEventStore();
    const { effects, llmWork } = memoryEffects(store);
    const appendAtHead = effects.appendAtHead;
    let raced = false;
    effects.appendAtHead = async (path, batch, expected) => {
      if (!raced && batch.some((e) => e.type === "agent/llm-request-requested")) {
        raced = true;
        // Another event takes the head first: this append conflicts.
        await store.append(path, [userSays("and another thing")]);
      }
      return appendAtHead(path, batch, expected);
    };
    await startWorker(store, effects);
    await store.append(PATH, born(0));
    await store.append(PATH, [userSays("hi")]);
    await waitFor(async () => ofType(await store.read(PATH), "agent/llm-request-requested").length === 1, { timeoutMs: 5000 });
    const events = await store.read(PATH);
    const request = ofType(events, "agent/llm-request-requested")[0]!;
    await waitFor(() => llmWork.includes(request.offset), { timeoutMs: 2000, what: "the request handed over at its own offset" });
    // The early item named the offset the racing message took: a driver acks it as not a request.
    expect(llmWork).toEqual([4, request.offset]);
    expect(events.find((e) => e.offset === 4)?.type).toBe("agents/context-added");
  });

  it("interrupts an open request: the driver's partial text, then the cancelled settlement", async () => {
    const store = new MemoryEventStore();
    const { effects, interrupts } = memoryEffects(store, { partialText: "I was say" });
    await startWorker(store, effects);
    await store.append(PATH, born(0));
    await store.append(PATH, [userSays("first")]);
    await waitFor(async () => ofType(await store.read(PATH), "agent/llm-request-requested").length === 1, { timeoutMs: 5000 });
    const requestOffset = ofType(await store.read(PATH), "agent/llm-request-requested")[0]!.offset;
    await store.append(PATH, [userSays("stop, do this instead", "interrupt-current-request")]);
    await waitFor(async () => ofType(await store.read(PATH), "agent/llm-request-settled").length === 1, { timeoutMs: 5000 });
    const events = await store.read(PATH);
    expect(interrupts).toEqual([requestOffset]);
    const partial = events.find((e) => e.idempotencyKey === `agent/render-interrupted-partial@${requestOffset}`);
    expect(partial?.payload).toMatchObject({
      role: "assistant",
      content: "[Response interrupted by the user's next message; partial output follows]\nI was say",
    });
    expect(ofType(events, "agent/llm-request-settled")[0]!.payload).toEqual({
      requestOffset,
      result: { status: "cancelled", reason: "interrupted-by-user-input", partialText: "I was say" },
    });
    // The interrupting message is the next trigger: a second request follows.
    await waitFor(async () => ofType(await store.read(PATH), "agent/llm-request-requested").length === 2, { timeoutMs: 5000 });
  });

  it("given a fenced reply streaming on the live lane, then it publishes the prose and the script apart, in order", async () => {
    const store = new MemoryEventStore();
    const { effects } = memoryEffects(store);
    const worker = await startWorker(store, effects);
    await store.append(PATH, born(600_000));
    await waitFor(async () => (await store.read(PATH)).length === 2, { timeoutMs: 5000 });
    const watcher = store.subscribe(PATH, { fromOffset: 3, ephemeral: true });
    const chunk = (sequence: number, content: string) => ({
      type: "agent/llm-response-chunks",
      payload: { llmRequestOffset: 2, sequence, chunks: [{ choices: [{ index: 0, delta: { content } }] }] },
    });
    await store.append(PATH, [chunk(0, "Counting the pulls.\n\n```ts\nasync (itx) => (await itx.repo")]);
    await store.append(PATH, [chunk(1, ".listPulls()).length\n")]);
    await store.append(PATH, [chunk(2, "```\n")]);
    const previews = await collectUntil(watcher, (items) => {
      const code = items.filter((e) => e.type === "render/script-delta").map((e) => (e.payload as { code: string }).code).join("");
      return code.includes(".listPulls()).length");
    }, 5000);
    await watcher.close();
    const prose = previews.filter((e) => e.type === "render/message-delta").map((e) => (e.payload as { text: string }).text).join("");
    const code = previews.filter((e) => e.type === "render/script-delta").map((e) => (e.payload as { code: string }).code).join("");
    expect(prose).toBe("Counting the pulls.");
    expect(code).toBe("async (itx) => (await itx.repo.listPulls()).length");
    expect(previews.every((e) => e.ephemeral === true && (e.payload as { llmRequestOffset: number }).llmRequestOffset === 2)).toBe(true);
    // Nothing of it is stored.
    expect((await store.read(PATH)).some((e) => e.type.startsWith("render/"))).toBe(false);
    // Once the reply is settled its lane (the whole reply text) is let go.
    expect(worker.processor(PATH)?.previewedRequests).toEqual([2]);
    await store.append(PATH, [{ type: "agent/llm-request-settled", payload: { requestOffset: 2, result: { status: "succeeded", text: "" } } }]);
    await waitFor(() => worker.processor(PATH)?.previewedRequests.length === 0, { timeoutMs: 5000 });
  });

  it("given a stream that was never born, then its live lane gets no previews", async () => {
    const store = new MemoryEventStore();
    const { effects } = memoryEffects(store);
    const worker = await startWorker(store, effects);
    await store.append(PATH, [userSays("not an agent")]);
    await waitFor(() => worker.processor(PATH)?.state.lastFoldedOffset === 1, { timeoutMs: 5000 });
    const watcher = store.subscribe(PATH, { fromOffset: 2, ephemeral: true });
    await store.append(PATH, [{ type: "agent/llm-response-chunks", payload: { llmRequestOffset: 1, sequence: 0, chunks: [{ choices: [{ index: 0, delta: { content: "Hi.\n" } }] }] } }]);
    const seen = await collectUntil(watcher, (items) => items.some((e) => e.type === "agent/llm-response-chunks"), 5000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await watcher.close();
    expect(seen.some((e) => e.type.startsWith("render/"))).toBe(false);
  });

  it("expires an open request nobody settles, with the contract's error", async () => {
    const store = new MemoryEventStore();
    // The clock runs 10 minutes ahead of the store's createdAt stamps.
    const { effects } = memoryEffects(store, { now: () => Date.now() + 10 * 60_000 });
    await startWorker(store, effects);
    await store.append(PATH, born(0));
    await store.append(PATH, [userSays("hello?")]);
    await waitFor(async () => ofType(await store.read(PATH), "stream/error-occurred").length === 1, { timeoutMs: 5000 });
    const events = await store.read(PATH);
    const request = ofType(events, "agent/llm-request-requested")[0]!;
    expect(ofType(events, "agent/llm-request-settled")[0]!.payload).toEqual({
      requestOffset: request.offset,
      result: { status: "cancelled", reason: "expired" },
    });
    expect(ofType(events, "stream/error-occurred")[0]!.payload).toEqual({
      message: `LLM request @${request.offset} expired before it ran; the pending turn was dropped. A new message starts fresh.`,
    });
    // And the error is transcribed for the model (developer role, never triggering).
    await waitFor(async () => (await store.read(PATH)).some((e) => e.idempotencyKey?.startsWith("agent/transcribe-error@")), { timeoutMs: 5000 });
  });

  it("restores a snapshot and re-arms the debounce timer from state", async () => {
    const store = new MemoryEventStore();
    const snapshots = memorySnapshotStore();
    const first = memoryEffects(store);
    const worker = await startWorker(store, first.effects, snapshots);
    await store.append(PATH, born(400));
    await store.append(PATH, [userSays("remember me")]);
    await waitFor(() => worker.processor(PATH)?.state.pendingLlmRequestTrigger !== null && worker.processor(PATH) !== undefined, { timeoutMs: 2000 });
    expect(await worker.checkpointNow()).toBeGreaterThan(0);
    expect(JSON.parse(snapshots.checkpoints.get(store.partitionOf(PATH))!).pending).toEqual([PATH]);
    await worker.stop(); // dies mid-debounce
    workers.splice(workers.indexOf(worker), 1);
    expect(ofType(await store.read(PATH), "agent/llm-request-requested")).toHaveLength(0);

    const second = memoryEffects(store);
    const successor = await startWorker(store, second.effects, snapshots);
    expect(successor.processor(PATH)?.state.lastFoldedOffset).toBe(3);
    await waitFor(async () => ofType(await store.read(PATH), "agent/llm-request-requested").length === 1, { timeoutMs: 5000 });
  });

  it("a successor whose first read of a pending agent fails (NATS electing leaders) tries again and appends the request", async () => {
    // Regression (NATS-leader chaos test): a takeover's rebuild of an agent with work pending
    // timed out once and the agent was left to "wake on its next event", which never came.
    const store = new MemoryEventStore();
    const snapshots = memorySnapshotStore();
    const worker = await startWorker(store, memoryEffects(store).effects, snapshots);
    await store.append(PATH, born(400));
    await store.append(PATH, [userSays("still there?")]);
    await waitFor(() => worker.processor(PATH)?.state.pendingLlmRequestTrigger !== null && worker.processor(PATH) !== undefined, { timeoutMs: 2000 });
    await worker.checkpointNow();
    await worker.stop(); // dies mid-debounce, the agent pending in its checkpoint
    workers.splice(workers.indexOf(worker), 1);

    let failedReads = 0;
    const electing = Object.create(store) as MemoryEventStore;
    electing.read = async (path, options) => {
      if (path === PATH && failedReads < 2) {
        failedReads += 1;
        throw new AgentRuntimeError("unavailable", `read ${path}: NATS is unavailable (timeout); retry later.`, { retryable: true });
      }
      return store.read(path, options);
    };
    await startWorker(electing, memoryEffects(store).effects, snapshots);
    await waitFor(async () => ofType(await store.read(PATH), "agent/llm-request-requested").length === 1, { timeoutMs: 5000 });
    expect(failedReads).toBe(2);
  });

  it("hands every requested script to the capability host once", async () => {
    const store = new MemoryEventStore();
    const { effects, scriptWork } = memoryEffects(store);
    await startWorker(store, effects);
    await store.append(PATH, born(60_000));
    await store.append(PATH, [
      { type: "capability-host/script-run-requested", payload: { code: "return 1", executionId: "api:1", expiresAt: new Date(Date.now() + 60_000).toISOString() } },
    ]);
    await waitFor(() => scriptWork.length === 1, { timeoutMs: 2000 });
    expect(scriptWork).toEqual(["api:1"]);
  });
});

describe("the project worker inside the reducer", () => {
  it("configures an agent born into a project within milliseconds, releasing the held first turn", async () => {
    const store = new MemoryEventStore();
    const { effects } = memoryEffects(store);
    await startWorker(store, effects);
    const birth = await store.append(PATH, [
      { type: "agent/created", payload: { project: { slug: "demo" } } },
      { type: "agent/configured", payload: { config: { interpretResponses: true, llmRequestDebounceMs: 60_000 } } },
      { type: "agents/context-added", payload: { role: "system", key: "output-formatting", content: "fenced dialect" } },
    ]);
    await store.append(PATH, [userSays("hi — what can you do?")]);
    await waitFor(async () => ofType(await store.read(PATH), "agent/llm-request-requested").length === 1, { timeoutMs: 5000 });
    const events = await store.read(PATH);
    const configured = events.find((e) => e.idempotencyKey === `worker/birth@${birth.events[0]!.offset}/configured`)!;
    expect(configured.payload).toEqual({ config: { interpretResponses: false, llmRequestDebounceMs: 250 } });
    expect(Date.parse(configured.createdAt) - Date.parse(birth.events[0]!.createdAt)).toBeLessThan(1000);
  });

  it("leaves an agent born without a project to the 60 s birth window", async () => {
    const store = new MemoryEventStore();
    const { effects } = memoryEffects(store);
    const worker = await startWorker(store, effects);
    await store.append(PATH, born(60_000));
    await store.append(PATH, [userSays("anyone?")]);
    await waitFor(() => worker.processor(PATH)?.state.pendingLlmRequestTrigger !== null && worker.processor(PATH) !== undefined, { timeoutMs: 2000 });
    await worker.processor(PATH)!.settle();
    const events = await store.read(PATH);
    expect(events.map((e) => e.type)).toEqual(["agent/created", "agent/configured", "agents/context-added"]);
  });
});

describe("a partition feed that fails", () => {
  it("is followed again from the last folded sequence, and the agent keeps being served", async () => {
    const store = new MemoryEventStore();
    // The first feed fails after delivering what it has, as a JetStream consumer does when its
    // node dies; later feeds behave.
    let feeds = 0;
    const flaky = Object.create(store) as MemoryEventStore;
    flaky.feed = (options) => {
      feeds += 1;
      const inner = store.feed(options);
      if (feeds > 1) return inner;
      return {
        close: () => inner.close(),
        async *[Symbol.asyncIterator]() {
          let delivered = 0;
          for await (const batch of inner) {
            yield batch;
            delivered += 1;
            if (delivered === 1) throw new Error("NATS is unavailable (timeout)");
          }
        },
      };
    };
    const { effects } = memoryEffects(store);
    const worker = new PartitionWorker({ partition: store.partitionOf(PATH), store: flaky, snapshots: memorySnapshotStore(), effects, logger });
    workers.push(worker);
    await worker.start();
    await store.append(PATH, born(0));
    await store.append(PATH, [userSays("are you there?")]);
    await waitFor(async () => ofType(await store.read(PATH), "agent/llm-request-requested").length === 1, { timeoutMs: 5000 });
    expect(feeds).toBeGreaterThan(1);
    expect(worker.processor(PATH)?.state.lastFoldedOffset).toBeGreaterThanOrEqual(3);
  });
});

describe("a turn due further ahead than a timer can wait", () => {
  it("given a debounce of 35 days (past setTimeout's 24.8), when a message arrives, then the reducer waits instead of deciding again every millisecond", async () => {
    const store = new MemoryEventStore();
    let decisions = 0;
    const { effects } = memoryEffects(store, {
      now: () => {
        decisions++;
        return Date.now();
      },
    });
    const worker = await startWorker(store, effects);
    await store.append(PATH, born(35 * 24 * 3600 * 1000));
    await store.append(PATH, [userSays("see you next month")]);
    await waitFor(() => worker.processor(PATH)?.state.lastFoldedOffset === 3, { timeoutMs: 5000 });
    await worker.processor(PATH)!.settle();
    decisions = 0;
    await new Promise((resolve) => setTimeout(resolve, 300));
    // A timer past 2^31 - 1 ms fires after 1 ms: the agent was decided again each time, forever.
    expect(decisions).toBeLessThan(10);
    expect(ofType(await store.read(PATH), "agent/llm-request-requested")).toEqual([]);
  });
});

describe("a stream that was never born", () => {
  it("is not an agent: nothing is transcribed into it", async () => {
    const store = new MemoryEventStore();
    const { effects } = memoryEffects(store);
    const worker = await startWorker(store, effects);
    await store.append(PATH, [{ type: "stream/error-occurred", payload: { message: "not an agent" } }]);
    await store.append(PATH, [{ type: "agent/created", payload: {} }]);
    await store.append(PATH, [{ type: "stream/error-occurred", payload: { message: "now it is" } }]);
    await waitFor(async () => (await store.read(PATH)).some((e) => e.idempotencyKey === "agent/transcribe-error@3"), { timeoutMs: 5000 });
    await worker.processor(PATH)!.settle();
    expect((await store.read(PATH)).some((e) => e.idempotencyKey === "agent/transcribe-error@1")).toBe(false);
  });
});
