// Regression (chaos soak, issue 16): a settlement append that failed while a NATS node was down
// threw the work item back to the queue; the model's answer was thrown away, and the turn waited
// for a redelivery (the queue's backoff, up to 30 s) and a second model call long after NATS was
// back. The settlement is now retried in-process and lands as soon as NATS answers again.

import type { AgentEvent } from "@agentrt/contract";
import { createMetrics } from "@agentrt/service-kit";
import { type EventStore } from "@agentrt/streams";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { type NatsServer, startNatsServer, testLogger } from "@agentrt/testing";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDriverMetrics } from "../src/metrics.ts";
import type { ModelClient } from "../src/model-client.ts";
import { RequestRunner } from "../src/request-runner.ts";
import { RunningRequests } from "../src/running-requests.ts";
import { DEFAULT_CONTEXT_WINDOWS } from "../src/usage.ts";
import { append, birthEvents, requested, userMessage } from "./driver-harness.ts";

let server: NatsServer;
let nc: NatsConnection;
let store: JetStreamEventStore;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  store = await JetStreamEventStore.open(nc, { publishTimeoutMs: 1_000 });
});
afterAll(async () => {
  await store?.close();
  await nc?.close();
  await server?.stop();
});

it("commits the model's answer once NATS is back, in the same run, when the settlement append first fails with NATS down", async () => {
  const path = "/agents/test/settle-across-restart";
  await append(store, path, [...birthEvents(), userMessage("hello")]);
  const [request] = await append(store, path, [requested()]);
  const R = (request as AgentEvent).offset;

  let modelCalls = 0;
  const model: ModelClient = {
    async *stream() {
      modelCalls++;
      yield { kind: "chunk", raw: { text: "hi there" }, text: "hi there" };
    },
  } as ModelClient;
  // The settlement's first append meets NATS down (SIGKILL, like the soak's node kill); the
  // server is back 2 s later, longer than a publish waits for its ack.
  let settlementAppends = 0;
  let restarted: Promise<void> | undefined;
  const flaky = Object.create(store) as EventStore;
  flaky.append = async (...args: Parameters<EventStore["append"]>) => {
    const settles = args[1].some((e) => (e as { type?: unknown }).type === "agent/llm-request-settled");
    if (settles && ++settlementAppends === 1) {
      await server.kill("SIGKILL");
      restarted = new Promise((resolve) => setTimeout(resolve, 2_000)).then(() => server.restart());
    }
    return store.append(...args);
  };
  const runner = new RequestRunner({
    store: flaky,
    modelFor: () => model,
    providers: {},
    logger: testLogger("llm-driver-test"),
    metrics: createDriverMetrics(createMetrics("llm-driver-test", { collectDefaults: false })),
    running: new RunningRequests(),
    settings: { idleTimeoutMs: 30_000, contextWindows: DEFAULT_CONTEXT_WINDOWS },
    nowMs: Date.now,
  });

  const started = Date.now();
  const outcome = await runner.run(path, R);
  const tookMs = Date.now() - started;
  await restarted;

  // Our retry, or the first publish itself flushed once the client reconnected (then the retry
  // finds its keys and stands down): either way the answer is committed once, from one model call.
  expect(["succeeded", "lost-race"]).toContain(outcome);
  expect(settlementAppends).toBeGreaterThan(1);
  expect(modelCalls).toBe(1);
  const events = await store.read(path);
  const settled = events.filter((e) => e.type === "agent/llm-request-settled");
  expect(settled).toHaveLength(1);
  expect(settled[0]).toMatchObject({ payload: { requestOffset: R, result: { status: "succeeded", text: "hi there" } } });
  expect(events.filter((e) => e.type === "agents/context-added" && e.payload.role === "assistant")).toHaveLength(1);
  // Within a few retries of NATS being back, not a queue backoff later.
  expect(tookMs).toBeLessThan(12_000);
}, 30_000);
