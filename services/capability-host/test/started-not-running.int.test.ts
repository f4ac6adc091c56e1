// A script this host started but is not running: its `script-run-started` append failed with
// an unknown outcome (a publish unconfirmed while a NATS node was down) and did land, or its
// settlement failed past every retry after the body ran. The item went back to the queue and
// came again; the run record names THIS host, whose lease is current, so it was taken for a
// live run and put back every second — while this host lives, nobody would ever settle it. A
// handling of an item waits for any earlier one of the same script in this process, so a record
// naming this host with no other handling here means no run: it is settled `orphaned`.

import type { AgentEvent } from "@agentrt/contract";
import { MemoryEventStore } from "@agentrt/streams";
import { type NatsServer, startNatsServer, testLogger } from "@agentrt/testing";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { HostLiveness } from "../src/host-liveness.ts";
import { ScriptRunner, type ScriptRunnerDeps } from "../src/script-runner.ts";
import { startedKey } from "../src/settlements.ts";

let server: NatsServer;
let nc: NatsConnection;
let liveness: HostLiveness;
const logger = testLogger("capability-host-test");

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  liveness = await HostLiveness.start({ nc, hostId: "host-a", ttlMs: 5_000, logger });
});
afterAll(async () => {
  await liveness?.stop();
  await nc?.close();
  await server?.stop();
});

it("settles orphaned a script the run record says this host runs when no handling here runs it", async () => {
  const store = new MemoryEventStore();
  const path = "/agents/test/started-not-running";
  const executionId = "test:lost-start";
  await store.append(path, [
    { type: "agent/created", payload: {} },
    { type: "capability-host/script-run-requested", payload: { code: "return 1;", executionId, expiresAt: new Date(Date.now() + 120_000).toISOString() } },
  ]);
  // What checkAndRun did before its started append "failed": the record, then the append (landed).
  await liveness.recordRun(path, executionId);
  await store.append(path, [{ type: "capability-host/script-run-started", payload: { executionId }, idempotencyKey: startedKey(executionId) }]);

  // Only the store, the liveness and the logger are reached on the way to a settlement.
  const runner = new ScriptRunner({ store, liveness, logger } as unknown as ScriptRunnerDeps);
  expect(await runner.handle(path, executionId, 2)).toBe("orphaned");
  const settled = (await store.read(path)).filter(
    (e): e is Extract<AgentEvent, { type: "capability-host/script-run-settled" }> => e.type === "capability-host/script-run-settled",
  );
  expect(settled).toHaveLength(1);
  expect(settled[0]!.payload.settlement).toMatchObject({ status: "failed", failureKind: "orphaned" });
});

it("leaves a script alone that another host with a current lease runs", async () => {
  const other = await HostLiveness.start({ nc, hostId: "host-b", ttlMs: 5_000, logger });
  try {
    const store = new MemoryEventStore();
    const path = "/agents/test/started-elsewhere";
    const executionId = "test:running-elsewhere";
    await store.append(path, [
      { type: "agent/created", payload: {} },
      { type: "capability-host/script-run-requested", payload: { code: "return 1;", executionId, expiresAt: new Date(Date.now() + 120_000).toISOString() } },
    ]);
    await other.recordRun(path, executionId);
    await store.append(path, [{ type: "capability-host/script-run-started", payload: { executionId }, idempotencyKey: startedKey(executionId) }]);
    const runner = new ScriptRunner({ store, liveness, logger } as unknown as ScriptRunnerDeps);
    expect(await runner.handle(path, executionId, 2)).toBe("runner-alive");
  } finally {
    await other.stop();
  }
});
