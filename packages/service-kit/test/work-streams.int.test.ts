// One work-queue stream per kind (work-queue.ts): the chaos soak saw nats-server 2.9 hand one
// kind's items to the other kind's filtered consumer on the single shared stream, where they
// never reached their own workers. These specs pin the layout that rules that out, and the
// upgrade from the single stream of earlier versions.

import { AckPolicy, RetentionPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { nanos, type NatsConnection } from "@nats-io/nats-core";
import { pino, type Logger } from "pino";
import { type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  LEGACY_WORK_STREAM,
  WORK_STREAMS,
  consumeWork,
  ensureWorkStream,
  ensureWorkStreams,
  publishWork,
  type LlmWorkItem,
  type ScriptWorkItem,
} from "../src/index.ts";

let server: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeEach(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  jsm = await jetstreamManager(nc);
});

afterEach(async () => {
  await nc.close().catch(() => undefined);
  await server.stop();
});

/** A logger whose lines the spec can read. */
function recordingLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => out.push(line) });
  return { logger, lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** The single stream and filtered consumers an earlier version left behind, holding one item. */
async function legacyLayout(): Promise<void> {
  await jsm.streams.add({ name: LEGACY_WORK_STREAM, subjects: ["work.>"], retention: RetentionPolicy.Workqueue, duplicate_window: nanos(120_000) });
  await jsm.consumers.add(LEGACY_WORK_STREAM, { durable_name: "llm-driver", ack_policy: AckPolicy.Explicit, filter_subject: "work.llm.>" });
  await jsm.consumers.add(LEGACY_WORK_STREAM, { durable_name: "capability-host", ack_policy: AckPolicy.Explicit, filter_subject: "work.script.>" });
  await jetstream(nc).publish("work.llm.0", JSON.stringify({ streamPath: "/a/old", requestOffset: 3 }));
}

async function streamNames(): Promise<string[]> {
  const names: string[] = [];
  for await (const info of jsm.streams.list()) names.push(info.config.name);
  return names.sort();
}

describe("one work-queue stream per kind", () => {
  it("given an earlier version's single stream, the first start-up of each kind replaces it with that kind's own stream", async () => {
    // Given the single stream of work.> with a filtered consumer per kind and an item in it
    await legacyLayout();
    const { logger, lines } = recordingLogger();
    // When a driver starts (its kind's stream), then a host (its own)
    await ensureWorkStream(jsm, "llm", { logger });
    await ensureWorkStream(jsm, "script", { logger });
    // Then the old stream is gone, once, with a warning that says what became of its items
    expect(await streamNames()).toEqual([WORK_STREAMS.llm, WORK_STREAMS.script].sort());
    const warnings = lines().filter((l) => l.stream === LEGACY_WORK_STREAM);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, items: 1 });
    expect(String(warnings[0]!.msg)).toMatch(/redrive/);
    // And each stream holds exactly its own kind's subjects
    expect((await jsm.streams.info(WORK_STREAMS.llm)).config).toMatchObject({ subjects: ["work.llm.>"], retention: RetentionPolicy.Workqueue });
    expect((await jsm.streams.info(WORK_STREAMS.script)).config).toMatchObject({ subjects: ["work.script.>"], retention: RetentionPolicy.Workqueue });
  });

  it("given the old stream, replicas of every service starting at once all come up with both streams", async () => {
    await legacyLayout();
    // When a reducer (both kinds), two drivers and two hosts ensure their streams concurrently
    const second = await connect({ servers: server.url });
    try {
      const other = await jetstreamManager(second);
      await Promise.all([ensureWorkStreams(jsm), ensureWorkStream(other, "llm"), ensureWorkStream(jsm, "llm"), ensureWorkStream(other, "script"), ensureWorkStream(jsm, "script")]);
    } finally {
      await second.close();
    }
    // Then nobody failed and the layout is the per-kind one
    expect(await streamNames()).toEqual([WORK_STREAMS.llm, WORK_STREAMS.script].sort());
  });

  it("each kind's items land in its own stream, and each kind's consumer is unfiltered on that stream and sees only its own", async () => {
    await ensureWorkStreams(jsm);
    const js = jetstream(nc);
    const llmSeen: LlmWorkItem[] = [];
    const scriptSeen: ScriptWorkItem[] = [];
    const logger = recordingLogger().logger;
    const drivers = await consumeWork(js, jsm, { kind: "llm", durable: "llm-driver", logger, handler: async (item) => (llmSeen.push(item), { type: "ack" }) });
    const hosts = await consumeWork(js, jsm, { kind: "script", durable: "capability-host", logger, handler: async (item) => (scriptSeen.push(item), { type: "ack" }) });
    try {
      // When items of both kinds are published, interleaved, over several partitions
      for (let i = 1; i <= 6; i++) {
        await publishWork(js, "llm", i % 4, { streamPath: `/a/llm${i}`, requestOffset: i });
        await publishWork(js, "script", i % 4, { streamPath: `/a/script${i}`, requestedOffset: i, executionId: `agent-output:${i}` });
      }
      await waitFor(() => llmSeen.length === 6 && scriptSeen.length === 6, { timeoutMs: 10_000, what: "every item handled" });
      // Then each consumer handled exactly its own kind
      expect(llmSeen.map((i) => i.streamPath).sort()).toEqual([1, 2, 3, 4, 5, 6].map((i) => `/a/llm${i}`));
      expect(scriptSeen.map((i) => i.streamPath).sort()).toEqual([1, 2, 3, 4, 5, 6].map((i) => `/a/script${i}`));
      // And neither consumer has a filter to get wrong: it is the only one on its kind's stream
      for (const [stream, durable] of [
        [WORK_STREAMS.llm, "llm-driver"],
        [WORK_STREAMS.script, "capability-host"],
      ] as const) {
        const consumers: string[] = [];
        for await (const c of jsm.consumers.list(stream)) consumers.push(c.name);
        expect(consumers).toEqual([durable]);
        expect((await jsm.consumers.info(stream, durable)).config.filter_subject ?? "").toBe("");
      }
    } finally {
      await drivers.stop();
      await hosts.stop();
    }
  });
});
