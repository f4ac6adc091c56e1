// The store across a nats-server crash: acknowledged appends survive SIGKILL, a live
// subscription resumes after the restart with no gap and no duplicate, and while the server is
// down appends fail as retryable `unavailable` rather than hanging or half-committing.

import { AgentRuntimeError, type AgentEvent } from "@agentrt/contract";
import { type NatsServer, collectUntil, startNatsServer } from "@agentrt/testing";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";
import { note } from "./event-store-suite.ts";

let server: NatsServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

it("keeps acknowledged appends and resumes live subscriptions across a server SIGKILL", async () => {
  const store = await JetStreamEventStore.open(nc, { publishTimeoutMs: 1_000 });
  const reader = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const readerStore = await JetStreamEventStore.open(reader);
  const path = "/restart/stream";
  for (let i = 1; i <= 20; i++) await store.append(path, [note(`before ${i}`)]);
  const subscription = readerStore.subscribe(path);
  await collectUntil(subscription, (items) => items.length >= 20);

  await server.kill("SIGKILL");
  const down = await store.append(path, [note("while down")]).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(down).toBeInstanceOf(AgentRuntimeError);
  expect(down).toMatchObject({ code: "unavailable", retryable: true });

  await server.restart();
  // Appends succeed again once the client has reconnected; retry the retryable error as a caller would.
  const acked: AgentEvent[] = [];
  for (let i = 1; i <= 20; i++) {
    for (;;) {
      try {
        acked.push(...(await store.append(path, [note(`after ${i}`, `after-${i}`)])).events);
        break;
      } catch (error) {
        if (!(error instanceof AgentRuntimeError && error.retryable)) throw error;
      }
    }
  }
  const stored = await store.read(path);
  const offsets = stored.map((e) => e.offset);
  expect(offsets).toEqual(Array.from({ length: stored.length }, (_, i) => i + 1));
  expect(stored.slice(0, 20).map((e) => (e.type === "agents/context-added" ? e.payload.content : ""))).toEqual(Array.from({ length: 20 }, (_, i) => `before ${i + 1}`));
  for (const event of acked) expect(stored[event.offset - 1]).toEqual(event);
  const live = await collectUntil(subscription, (items) => items.some((e) => e.idempotencyKey === "after-20"), 30_000);
  expect(live.map((e) => e.offset)).toEqual(offsets.slice(20));
  await subscription.close();
  await readerStore.close();
  await reader.close();
  await store.close();
}, 60_000);
