// A long read streams its records through one pull after another without waiting between
// them. nats.js asks the server for at most 100 messages per byte-bounded pull; the server ends
// the pull there, but the client kept waiting until it missed two idle heartbeats (1.5 s), so a
// whole-stream read of 10 000 records took 150 s. Against a real nats-server: a scan of 1 200
// records is woken by no missed heartbeat, reads every record once and in order, and the
// store's read of the same stream returns every event.

import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";
import { RecordReader } from "../src/jetstream/records.ts";
import { durableSubject } from "../src/jetstream/subjects.ts";
import { partitionOfPath } from "../src/partition.ts";

let server: NatsServer;
let nc: NatsConnection;
let store: JetStreamEventStore;

const RECORDS = 1_200;
const names = { streamName: "EV_LONG", subjectPrefix: "evl", ephemeralPrefix: "ephl", partitionCount: 4 };
const path = "/long/read/stream";
const subject = durableSubject({ durablePrefix: names.subjectPrefix, ephemeralPrefix: names.ephemeralPrefix }, partitionOfPath(path, names.partitionCount), path);
const note = (i: number) => ({ type: "agents/context-added", payload: { role: "user", content: `message ${i}` } });

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  store = await JetStreamEventStore.open(nc, names);
  // One record per append; a second stream interleaved, as agents share the JetStream stream.
  for (let i = 1; i <= RECORDS; i++) {
    await store.append(path, [note(i)]);
    if (i % 3 === 0) await store.append("/long/read/other", [note(i)]);
  }
}, 120_000);

afterAll(async () => {
  await store?.close();
  await nc?.close();
  await server?.stop();
});

it("given a stream of 1 200 records, when it is scanned whole, then every record comes once, in order, and no pull waits for missed heartbeats", async () => {
  const reader = new RecordReader(await jetstreamManager(nc), jetstream(nc), names.streamName);
  const last = await reader.last(subject);
  expect(last?.first).toBe(RECORDS);
  const firsts: number[] = [];
  for await (const record of reader.scan(subject, 1, last?.seq ?? 0)) firsts.push(record.first);
  expect(firsts).toEqual(Array.from({ length: RECORDS }, (_, i) => i + 1));
  expect(reader.pullsWokenByHeartbeats).toBe(0);
  expect(reader.scansFinishedByGets).toBe(0);
}, 60_000);

it("given the same stream, when the store reads it whole and from the middle, then it returns every event asked for", async () => {
  const events = await store.read(path);
  expect(events.map((e) => e.offset)).toEqual(Array.from({ length: RECORDS }, (_, i) => i + 1));
  const page = await store.read(path, { fromOffset: 400, limit: 500 });
  expect(page.map((e) => e.offset)).toEqual(Array.from({ length: 500 }, (_, i) => i + 400));
  expect(page.at(-1)?.payload).toEqual({ role: "user", content: "message 899" });
}, 60_000);
