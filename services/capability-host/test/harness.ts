// Shared wiring for the host's integration tests: a real nats-server (harness), the JetStream
// event store, a running CapabilityHost, and helpers to request a script the way the reducer
// does (append `script-run-requested`, publish the work item) and wait for its settlement.

import type { AgentEvent } from "@agentrt/contract";
import { ensureWorkStreams, publishWork } from "@agentrt/service-kit";
import { type EventStore } from "@agentrt/streams";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { startNatsServer, testLogger, waitFor, type NatsServer } from "@agentrt/testing";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { CapabilityHost, type CapabilityHostOptions, WorkerChecker } from "../src/index.ts";

export const silentLogger = testLogger("capability-host-test");

export interface HostFixture {
  readonly server: NatsServer;
  readonly nc: NatsConnection;
  /** The host's store. */
  readonly hostStore: EventStore;
  /**
   * What the test reads and appends through: a second store on its own connection, as the
   * reducer would be. (Also sidesteps a read-staleness seen when one JetStreamEventStore
   * instance is polled while another path appends through it — reported to the streams owner.)
   */
  readonly store: EventStore;
  host: CapabilityHost | undefined;
  stop(): Promise<void>;
}

export async function startFixture(options: { startHost?: boolean; host?: Partial<CapabilityHostOptions> } = {}): Promise<HostFixture> {
  const server = await startNatsServer();
  const nc = await connect({ servers: server.url });
  const hostStore = await JetStreamEventStore.open(nc, { partitionCount: 4 });
  await ensureWorkStreams(await jetstreamManager(nc));
  const testNc = await connect({ servers: server.url });
  const store = await JetStreamEventStore.open(testNc, { partitionCount: 4 });
  const fixture: HostFixture = {
    server,
    nc,
    hostStore,
    store,
    host: undefined,
    async stop() {
      await fixture.host?.stop();
      await store.close();
      await hostStore.close();
      await testNc.close();
      await nc.close();
      await server.stop();
    },
  };
  if (options.startHost !== false) {
    fixture.host = await CapabilityHost.start({ nc, store: hostStore, logger: silentLogger, ackWaitMs: 5_000, ...options.host });
    // The host warms its checkers in the background; the tests' own time bounds start warm.
    if (fixture.host.checker instanceof WorkerChecker) await fixture.host.checker.whenWarm();
    await fixture.host.consume();
  }
  return fixture;
}

let counter = 0;
export function uniquePath(name: string): string {
  return `/agents/test/${name}-${process.pid}-${++counter}`;
}

export async function requestScript(
  fixture: Pick<HostFixture, "nc" | "store">,
  streamPath: string,
  code: string,
  options: { expiresInMs?: number; executionId?: string; requester?: { keyId: string; scopes: { prefix: string; verbs: string[] }[] } } = {},
): Promise<{ executionId: string; requestedOffset: number }> {
  if ((await fixture.store.lastOffset(streamPath)) === 0) {
    await fixture.store.append(streamPath, [{ type: "agent/created", payload: {}, idempotencyKey: "agent/created" }]);
  }
  const executionId = options.executionId ?? `test:${++counter}`;
  const expiresAt = new Date(Date.now() + (options.expiresInMs ?? 120_000)).toISOString();
  const appended = await fixture.store.append(streamPath, [
    { type: "capability-host/script-run-requested", payload: { code, executionId, expiresAt, ...(options.requester === undefined ? {} : { requester: options.requester }) } },
  ]);
  const requestedOffset = appended.events[0]!.offset;
  await publishWork(jetstream(fixture.nc), "script", fixture.store.partitionOf(streamPath), { streamPath, requestedOffset, executionId });
  return { executionId, requestedOffset };
}

type Settled = Extract<AgentEvent, { type: "capability-host/script-run-settled" }>;

export async function waitSettled(store: EventStore, streamPath: string, executionId: string, timeoutMs = 20_000): Promise<Settled> {
  return waitFor(
    async () => {
      const events = await store.read(streamPath);

      return events.find((e): e is Settled => e.type === "capability-host/script-run-settled" && e.payload.executionId === executionId);
    },
    { timeoutMs, what: `settlement of ${executionId}` },
  );
}

/** Requests a script (its lines joined, when given lines) and waits for its settlement. */
export async function settlementOf(
  fixture: Pick<HostFixture, "nc" | "store">,
  streamPath: string,
  code: string | readonly string[],
  options: Parameters<typeof requestScript>[3] = {},
): Promise<Settled["payload"]["settlement"]> {
  const { executionId } = await requestScript(fixture, streamPath, typeof code === "string" ? code : code.join("\n"), options);
  return (await waitSettled(fixture.store, streamPath, executionId)).payload.settlement;
}

export async function eventsOf(store: EventStore, streamPath: string, type: AgentEvent["type"]): Promise<AgentEvent[]> {
  return (await store.read(streamPath)).filter((e) => e.type === type);
}
