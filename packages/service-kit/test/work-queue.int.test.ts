import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { type NatsServer, startNatsServer, testLogger, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentRuntimeError, ContractViolationError } from "@agentrt/contract";
import { capturedWarnings, withStreamView } from "./support/reconcile.ts";
import { consumeWork, ensureWorkStreams, workStreamName, publishWork, retryBackoffMs, workOutcomeOfError, type WorkConsumer } from "../src/index.ts";

const logger = testLogger("test");
let server: NatsServer;
const connections: NatsConnection[] = [];

async function client(): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  return nc;
}

beforeAll(async () => {
  server = await startNatsServer();
  const nc = await client();
  await ensureWorkStreams(await jetstreamManager(nc));
});

afterAll(async () => {
  for (const nc of connections) await nc.close().catch(() => undefined);
  await server.stop();
});

describe("work queues", () => {
  it("creating the work stream twice is harmless", async () => {
    const nc = await client();
    await expect(ensureWorkStreams(await jetstreamManager(nc))).resolves.toBeUndefined();
  });

  it("brings an existing durable consumer's ack wait to the configured one (an upgrade from a 30 s default)", async () => {
    const nc = await client();
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const handler = async () => ({ type: "ack" as const });
    const old = await consumeWork(js, jsm, { kind: "script", durable: "upgrade", logger, handler, ackWaitMs: 30_000 });
    await old.stop();
    expect((await jsm.consumers.info(workStreamName("script"), "upgrade")).config.ack_wait).toBe(30_000 * 1_000_000);
    const current = await consumeWork(js, jsm, { kind: "script", durable: "upgrade", logger, handler, ackWaitMs: 2_500 });
    await current.stop();
    expect((await jsm.consumers.info(workStreamName("script"), "upgrade")).config.ack_wait).toBe(2_500 * 1_000_000);
    await jsm.consumers.delete(workStreamName("script"), "upgrade");
  });

  it("delivers a published item once, even when it is published twice", async () => {
    const nc = await client();
    const js = jetstream(nc);
    await publishWork(js, "llm", 3, { streamPath: "/a/dedup", requestOffset: 7 });
    await publishWork(js, "llm", 3, { streamPath: "/a/dedup", requestOffset: 7 });
    const seen: unknown[] = [];
    const consumer = await consumeWork(js, await jetstreamManager(nc), {
      kind: "llm",
      durable: "dedup",
      logger,
      handler: async (item) => {
        seen.push(item);
        return { type: "ack" };
      },
    });
    await waitFor(() => seen.length === 1, { timeoutMs: 5000 });
    // A second delivery would arrive within a fetch cycle; wait for the next one to pass.
    await publishWork(js, "llm", 3, { streamPath: "/a/dedup", requestOffset: 8 });
    await waitFor(() => seen.length === 2, { timeoutMs: 5000 });
    await consumer.stop();
    // A work-queue stream allows one consumer per subject filter: free "work.llm.>" again.
    await (await jetstreamManager(nc)).consumers.delete(workStreamName("llm"), "dedup");
    expect(seen).toEqual([
      { streamPath: "/a/dedup", requestOffset: 7 },
      { streamPath: "/a/dedup", requestOffset: 8 },
    ]);
  });

  it("keeps a claim alive with heartbeats, and hands it to another worker when its holder dies", async () => {
    const ncA = await client();
    const ncB = await client();
    await publishWork(jetstream(ncA), "script", 1, { streamPath: "/a/claims", requestedOffset: 4, executionId: "agent-output:4" });

    const deliveriesA: number[] = [];
    const consumerA: WorkConsumer = await consumeWork(jetstream(ncA), await jetstreamManager(ncA), {
      kind: "script",
      durable: "claims",
      logger,
      ackWaitMs: 1000,
      heartbeatMs: 200,
      handler: async (_item, context) => {
        deliveriesA.push(context.deliveryCount);
        return new Promise(() => undefined); // holds the claim until its process dies
      },
    });
    await waitFor(() => deliveriesA.length === 1, { timeoutMs: 5000 });

    const deliveriesB: number[] = [];
    const consumerB = await consumeWork(jetstream(ncB), await jetstreamManager(ncB), {
      kind: "script",
      durable: "claims",
      logger,
      ackWaitMs: 1000,
      handler: async (_item, context) => {
        deliveriesB.push(context.deliveryCount);
        return { type: "ack" };
      },
    });
    // Three ack-wait periods pass while A heartbeats: B must get nothing.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(deliveriesB).toEqual([]);

    // A's process "dies": its connection goes away without acking.
    await ncA.close();
    void consumerA.stop();
    await waitFor(() => deliveriesB.length === 1, { timeoutMs: 10_000 });
    expect(deliveriesB).toEqual([2]);
    await consumerB.stop();
  });

  it("stopTaking takes no new item while the one being handled goes on, heartbeating, its signal not aborted, until stop()", async () => {
    const ncA = await client();
    const ncB = await client();
    const js = jetstream(ncA);
    // A work-queue stream allows one consumer without a filter: free it of earlier tests' durables.
    const jsm = await jetstreamManager(ncA);
    for await (const c of jsm.consumers.list(workStreamName("script"))) await jsm.consumers.delete(workStreamName("script"), c.name);
    await publishWork(js, "script", 2, { streamPath: "/a/drain", requestedOffset: 1, executionId: "agent-output:1" });
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const handledA: number[] = [];
    let signalA: AbortSignal | undefined;
    const consumerA = await consumeWork(js, jsm, {
      kind: "script",
      durable: "drain",
      logger,
      ackWaitMs: 1000,
      heartbeatMs: 200,
      handler: async (item, context) => {
        handledA.push(item.requestedOffset);
        signalA = context.signal;
        await finished;
        return { type: "ack" };
      },
    });
    await waitFor(() => handledA.length === 1, { timeoutMs: 5000 });
    await consumerA.stopTaking();
    expect(consumerA.running()).toBe(false);
    // A second item, published after A stopped taking: A must not get it, B does.
    await publishWork(js, "script", 2, { streamPath: "/a/drain", requestedOffset: 2, executionId: "agent-output:2" });
    const handledB: number[] = [];
    const consumerB = await consumeWork(jetstream(ncB), await jetstreamManager(ncB), {
      kind: "script",
      durable: "drain",
      logger,
      ackWaitMs: 1000,
      handler: async (item) => {
        handledB.push(item.requestedOffset);
        return { type: "ack" };
      },
    });
    // Three ack waits pass: A's first item stays with A (heartbeats), B gets only the second.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(handledA).toEqual([1]);
    expect(handledB).toEqual([2]);
    expect(signalA?.aborted).toBe(false);
    finish();
    await consumerA.stop();
    expect(signalA?.aborted).toBe(true);
    await consumerB.stop();
    const info = await jsm.consumers.info(workStreamName("script"), "drain");
    expect(info.num_ack_pending + info.num_pending).toBe(0);
    await jsm.consumers.delete(workStreamName("script"), "drain");
  });

  it("rejects a malformed item without blocking the queue", async () => {
    const nc = await client();
    const js = jetstream(nc);
    await js.publish("work.llm.9", JSON.stringify({ nope: true }));
    await publishWork(js, "llm", 9, { streamPath: "/a/after-bad", requestOffset: 1 });
    const seen: string[] = [];
    const consumer = await consumeWork(js, await jetstreamManager(nc), {
      kind: "llm",
      durable: "bad-items",
      logger,
      handler: async (item) => {
        seen.push(item.streamPath);
        return { type: "ack" };
      },
    });
    await waitFor(() => seen.includes("/a/after-bad"), { timeoutMs: 5000 });
    await consumer.stop();
    await (await jetstreamManager(nc)).consumers.delete(workStreamName("llm"), "bad-items");
    expect(seen).not.toContain(undefined);
  });

  it("terminates an item whose handler threw a terminal error: it is never delivered again", async () => {
    const nc = await client();
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await publishWork(js, "llm", 5, { streamPath: "/a/terminal", requestOffset: 1 });
    const deliveries: number[] = [];
    const consumer = await consumeWork(js, jsm, {
      kind: "llm",
      durable: "terminal",
      logger,
      handler: async (_item, context) => {
        deliveries.push(context.deliveryCount);
        throw new ContractViolationError("invalid_event", "this append can never succeed");
      },
    });
    // Nothing pending and nothing awaiting an ack: a nak (even with a delay) would keep it pending.
    await waitFor(async () => {
      const info = await jsm.consumers.info(workStreamName("llm"), "terminal");
      return info.delivered.consumer_seq >= 1 && info.num_ack_pending === 0 && info.num_pending === 0;
    }, { timeoutMs: 5000, what: "the terminal item to leave the queue" });
    await consumer.stop();
    await jsm.consumers.delete(workStreamName("llm"), "terminal");
    expect(deliveries).toEqual([1]);
  });

  it("naks an item whose handler threw a retryable (or unclassified) error, and redelivers it after the backoff", async () => {
    const nc = await client();
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await publishWork(js, "llm", 6, { streamPath: "/a/retryable", requestOffset: 1 });
    const deliveredAt: number[] = [];
    /** The delivery count each delivery carried, so a failure says which backoff was asked for. */
    const counts: number[] = [];
    const consumer = await consumeWork(js, jsm, {
      kind: "llm",
      durable: "retryable",
      logger,
      handler: async (item, context) => {
        // Only this test's item: the stream may still hold an item another test left behind,
        // delivered to this new consumer too (it is acked and not timed).
        if (item.streamPath !== "/a/retryable") return { type: "ack" };
        deliveredAt.push(Date.now());
        counts.push(context.deliveryCount);
        if (context.deliveryCount === 1) throw new AgentRuntimeError("unavailable", "NATS went away", { retryable: true });
        if (context.deliveryCount === 2) throw new Error("a bug nobody classified");
        return { type: "ack" };
      },
    });
    await waitFor(() => deliveredAt.length === 3, { timeoutMs: 15_000, what: "two redeliveries" });
    await consumer.stop();
    await jsm.consumers.delete(workStreamName("llm"), "retryable");
    const seen = `deliveries at +${deliveredAt.map((t) => t - deliveredAt[0]!).join(", +")} ms with delivery counts ${counts.join(", ")}`;
    expect(counts, seen).toEqual([1, 2, 3]);
    expect(deliveredAt[1]! - deliveredAt[0]!, seen).toBeGreaterThanOrEqual(retryBackoffMs(1) - 50);
    expect(deliveredAt[2]! - deliveredAt[1]!, seen).toBeGreaterThanOrEqual(retryBackoffMs(2) - 50);
  });
});

describe("the broker action of a failed handler", () => {
  it("is term for terminal errors and nak with a growing, capped backoff otherwise", () => {
    expect(workOutcomeOfError(new ContractViolationError("invalid_event", "bad"), 1)).toEqual({ type: "drop" });
    expect(workOutcomeOfError(new AgentRuntimeError("invalid_config", "bad env"), 3)).toEqual({ type: "drop" });
    expect(workOutcomeOfError(new AgentRuntimeError("unavailable", "down", { retryable: true }), 1)).toEqual({ type: "retry", delayMs: 1_000 });
    expect(workOutcomeOfError(new Error("unclassified"), 2)).toEqual({ type: "retry", delayMs: 2_000 });
    expect(workOutcomeOfError(new Error("unclassified"), 50)).toEqual({ type: "retry", delayMs: 30_000 });
    // NATS itself failing ends within seconds (a restart, an election): never 30 s after it is back.
    expect(workOutcomeOfError(new AgentRuntimeError("unavailable", "down", { retryable: true }), 50)).toEqual({ type: "retry", delayMs: 5_000 });
    expect(workOutcomeOfError(new AgentRuntimeError("conflict", "too many writers", { retryable: true }), 50)).toEqual({ type: "retry", delayMs: 30_000 });
  });
});

describe("a work handler that runs long", () => {
  it("given a handler that has not finished, when the slow-handler interval passes, then a warning names its item and what it is doing, until it ends", async () => {
    const nc = await client();
    const js = jetstream(nc);
    const { lines, capture } = capturedWarnings();
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const jsm = await jetstreamManager(nc);
    // A work-queue stream takes one unfiltered consumer: earlier tests' script consumers go first.
    for await (const c of jsm.consumers.list(workStreamName("script"))) await jsm.consumers.delete(workStreamName("script"), c.name);
    await publishWork(js, "script", 2, { streamPath: "/a/slow-handler", requestedOffset: 4, executionId: "agent-output:3" });
    const consumer = await consumeWork(js, jsm, {
      kind: "script",
      durable: "slow-handler",
      logger: capture,
      slowHandlerLogMs: 150,
      describe: (item) => ({ phase: `typechecking ${item.executionId}` }),
      handler: async (item) => {
        if (item.streamPath !== "/a/slow-handler") return { type: "retry", delayMs: 60_000 };
        await released;
        return { type: "ack" };
      },
    });
    const slow = () => lines.filter((l) => l.msg === "a work item's handler is still running");
    await waitFor(() => slow().length >= 2, { what: "two slow-handler warnings", timeoutMs: 10_000 });
    expect(slow()[0]).toMatchObject({ item: { streamPath: "/a/slow-handler", executionId: "agent-output:3" }, phase: "typechecking agent-output:3" });
    expect(slow()[1]!.runningForMs as number).toBeGreaterThan(slow()[0]!.runningForMs as number);
    release();
    await new Promise((r) => setTimeout(r, 500));
    const after = slow().length;
    await new Promise((r) => setTimeout(r, 500));
    expect(slow().length).toBe(after);
    await consumer.stop();
    await jsm.consumers.delete(workStreamName("script"), "slow-handler");
  }, 30_000);
});

/** The LLM work stream with no consumer and no item (one unfiltered consumer per work stream). */
async function emptyLlmStream() {
  const nc = await client();
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const stream = workStreamName("llm");
  for await (const c of jsm.consumers.list(stream)) await jsm.consumers.delete(stream, c.name);
  // Items earlier tests left (put back with a delay when their consumer stopped) go too.
  await jsm.streams.purge(stream);
  return { js, jsm, stream };
}

describe("a work consumer that strands items", () => {
  it("given a durable consumer that cannot deliver an item its stream holds, when the worker compares them twice, then it recreates the consumer and the item is handled", async () => {
    const { js, jsm, stream } = await emptyLlmStream();
    // A consumer that delivers nothing the stream holds: here one left filtered on partition 0
    // (as an earlier version's were), in the soak nats-server's own R3 consumer after leader
    // changes. nats-server refuses any other start position on a work-queue stream.
    await jsm.consumers.add(stream, { durable_name: "stranding", ack_policy: AckPolicy.Explicit, filter_subject: "work.llm.0" });
    await publishWork(js, "llm", 5, { streamPath: "/a/stranded", requestOffset: 11 });
    const { lines, capture } = capturedWarnings();
    const seen: unknown[] = [];
    const consumer = await consumeWork(js, jsm, {
      kind: "llm",
      durable: "stranding",
      logger: capture,
      reconcileMs: 200,
      handler: async (item) => {
        seen.push(item);
        return { type: "ack" };
      },
    });
    await waitFor(() => seen.length === 1, { what: "the stranded item handled", timeoutMs: 10_000 });
    expect(seen).toEqual([{ streamPath: "/a/stranded", requestOffset: 11 }]);
    expect(lines.find((l) => l.msg === "the work consumer strands items its stream holds; recreating it")).toMatchObject({
      durable: "stranding",
      reason: expect.stringMatching(/holds 1 items but the consumer has none to deliver/),
    });
    // The recreated consumer is this version's: unfiltered, and later items flow as usual.
    expect((await jsm.consumers.info(stream, "stranding")).config.filter_subject ?? "").toBe("");
    await publishWork(js, "llm", 0, { streamPath: "/a/stranded", requestOffset: 12 });
    await waitFor(() => seen.length === 2, { what: "a later item handled", timeoutMs: 5_000 });
    expect(lines.filter((l) => l.msg === "the work consumer strands items its stream holds; recreating it")).toHaveLength(1);
    await consumer.stop();
    await jsm.consumers.delete(stream, "stranding");
  }, 30_000);

  it("given a consumer that agrees with its stream, then comparing them never recreates it", async () => {
    const { js, jsm, stream } = await emptyLlmStream();
    const { lines, capture } = capturedWarnings();
    let held = 0;
    const consumer = await consumeWork(js, jsm, {
      kind: "llm",
      durable: "agreeing",
      logger: capture,
      reconcileMs: 100,
      // Items held a while and put back: out with a worker, then waiting again, never stranded.
      handler: async () => {
        held++;
        await new Promise((r) => setTimeout(r, 300));
        return held < 4 ? { type: "retry", delayMs: 200 } : { type: "ack" };
      },
    });
    const created = (await jsm.consumers.info(stream, "agreeing")).created;
    await publishWork(js, "llm", 1, { streamPath: "/a/agreeing", requestOffset: 3 });
    await waitFor(() => held >= 4, { what: "the item retried and then acknowledged", timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 600));
    expect((await jsm.consumers.info(stream, "agreeing")).created).toBe(created);
    expect(lines.filter((l) => /work consumer/.test(String(l.msg)))).toEqual([]);
    await consumer.stop();
    await jsm.consumers.delete(stream, "agreeing");
  }, 30_000);

  it("given a stream whose state counts items its leader no longer holds, then the consumer is left as it is, the leader is asked once to step down, and that is said once", async () => {
    const { js, jsm, stream } = await emptyLlmStream();
    const { lines, capture } = capturedWarnings();
    const seen: unknown[] = [];
    let phantom = false;
    // The view the long soak met on an R3 work stream: acknowledged items gone from the leader,
    // still in the count and the first sequence its state reports.
    const doctored = withStreamView(jsm, (info) => (phantom ? { ...info, state: { ...info.state, messages: 3, first_seq: info.state.last_seq - 2 } } : undefined));
    const consumer = await consumeWork(js, doctored, {
      kind: "llm",
      durable: "counted-only",
      logger: capture,
      reconcileMs: 100,
      handler: async (item) => {
        seen.push(item);
        return { type: "ack" };
      },
    });
    for (const requestOffset of [1, 2, 3]) await publishWork(js, "llm", 2, { streamPath: "/a/counted-only", requestOffset });
    await waitFor(() => seen.length === 3, { what: "three items handled", timeoutMs: 5_000 });
    const created = (await jsm.consumers.info(stream, "counted-only")).created;
    phantom = true;
    await waitFor(() => lines.some((l) => /leader counts items it does not hold/.test(String(l.msg))), { what: "the counted-only warning", timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 600));
    expect((await jsm.consumers.info(stream, "counted-only")).created).toBe(created);
    expect(lines.filter((l) => /leader counts items it does not hold/.test(String(l.msg)))).toHaveLength(1);
    // A single server has no leader to change: the request is refused, said, and not repeated.
    expect(lines.filter((l) => l.msg === "the work stream's leader could not be asked to step down")).toHaveLength(1);
    expect(lines.filter((l) => /strands items its stream holds/.test(String(l.msg)))).toEqual([]);
    await consumer.stop();
    await jsm.consumers.delete(stream, "counted-only");
  }, 30_000);
});
