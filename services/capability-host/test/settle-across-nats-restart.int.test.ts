// Regression (chaos soak, issue 16, seed 838727): a host's `orphaned` settlement append timed
// out while a NATS node was down; the work item went back to the queue with its backoff (up to
// 30 s) and the turn waited for a redelivery long after NATS was back. A settlement append that
// fails because NATS does not answer is now retried in-process and lands as soon as it does.

import type { AgentEvent } from "@agentrt/contract";
import { type EventStore } from "@agentrt/streams";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { type NatsServer, startNatsServer, testLogger } from "@agentrt/testing";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ScriptRunner, type ScriptRunnerDeps } from "../src/script-runner.ts";
import { startedKey } from "../src/settlements.ts";

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

it("settles an orphaned script once NATS is back, in the same attempt, when the append first fails with NATS down", async () => {
  const path = "/agents/test/settle-across-restart";
  const executionId = "test:orphan";
  const expiresAt = new Date(Date.now() + 120_000).toISOString();
  await store.append(path, [
    { type: "agent/created", payload: {} },
    { type: "capability-host/script-run-requested", payload: { code: "return 1;", executionId, expiresAt } },
    // Started by a host that is gone: without a liveness lease every started script is orphaned.
    { type: "capability-host/script-run-started", payload: { executionId }, idempotencyKey: startedKey(executionId) },
  ]);

  // The settlement's first append meets NATS down (SIGKILL, like the soak's node kill); the
  // server is back 2 s later, longer than a publish waits for its ack.
  let appends = 0;
  let restarted: Promise<void> | undefined;
  const flaky = Object.create(store) as EventStore;
  flaky.append = async (...args: Parameters<EventStore["append"]>) => {
    if (++appends === 1) {
      await server.kill("SIGKILL");
      restarted = new Promise((resolve) => setTimeout(resolve, 2_000)).then(() => server.restart());
    }
    return store.append(...args);
  };
  // Only the store and the logger are reached on the way to an orphaned settlement.
  const runner = new ScriptRunner({ store: flaky, logger: testLogger("capability-host-test") } as unknown as ScriptRunnerDeps);

  const started = Date.now();
  const outcome = await runner.handle(path, executionId, 2);
  const tookMs = Date.now() - started;
  await restarted;

  // Our retry, or the first publish itself flushed once the client reconnected (then the retry
  // finds its key and stands down): either way exactly one settlement, and no redelivery needed.
  expect(["orphaned", "lost-race"]).toContain(outcome);
  expect(appends).toBeGreaterThan(1);
  const settled = (await store.read(path)).filter(
    (e): e is Extract<AgentEvent, { type: "capability-host/script-run-settled" }> => e.type === "capability-host/script-run-settled",
  );
  expect(settled).toHaveLength(1);
  expect(settled[0]!.payload.settlement).toMatchObject({ status: "failed", failureKind: "orphaned" });
  // Within a few retries of NATS being back, not a queue backoff later.
  expect(tookMs).toBeLessThan(12_000);
}, 30_000);
