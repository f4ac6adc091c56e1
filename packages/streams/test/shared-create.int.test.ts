// Services started together (the quickstart, a Helm install) each create the event stream and
// their buckets when missing. On nats-server 2.9 all but one of such simultaneous creates used
// to be refused ("subjects overlap with an existing stream") and that service exited at start.

import { Kvm } from "@nats-io/kv";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createShared } from "../src/jetstream/shared-create.ts";
import { ensureEventStream } from "../src/jetstream/stream-setup.ts";

const PROCESSES = 6;
const ROUNDS = 150;
let server: NatsServer;
let connections: NatsConnection[];

beforeAll(async () => {
  server = await startNatsServer();
  connections = await Promise.all(Array.from({ length: PROCESSES }, () => connect({ servers: server.url })));
});

afterAll(async () => {
  await Promise.all((connections ?? []).map((nc) => nc.close()));
  await server?.stop();
});

/** What each of the simultaneous creates threw ("" for none). */
async function refusals(creates: readonly (() => Promise<unknown>)[]): Promise<string[]> {
  const settled = await Promise.allSettled(creates.map((create) => create()));
  return settled.flatMap((result) => (result.status === "rejected" ? [String((result.reason as Error).message)] : []));
}

describe("creating what every service creates, from several processes at once", () => {
  it(`opens one KV bucket from ${PROCESSES} connections at once, ${ROUNDS} times, without a refusal`, async () => {
    const refused: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      refused.push(...(await refusals(connections.map((nc) => () => createShared(() => new Kvm(nc).create(`shared_${round}`, { history: 1, ttl: 6_000 }))))));
    }
    expect(refused).toEqual([]);
  });

  it(`creates the event stream from ${PROCESSES} connections at once, ${ROUNDS} times, without a refusal`, async () => {
    const managers = await Promise.all(connections.map((nc) => jetstreamManager(nc)));
    const refused: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const spec = { streamName: `EVENTS_${round}`, scheme: { durablePrefix: `ev${round}`, ephemeralPrefix: `eph${round}` }, partitionCount: 4, replicas: 1, storage: "file" as const, duplicateWindowMs: 60_000 };
      refused.push(...(await refusals(managers.map((jsm) => () => ensureEventStream(jsm, spec)))));
    }
    expect(refused).toEqual([]);
    // And every stream exists once, as asked
    const info = await managers[0]!.streams.info(`EVENTS_${ROUNDS - 1}`);
    expect(info.config.description).toBe("agentrt events; partitions=4");
  });
});
