// A test file's store fixture, set up once per file with vitest's hooks: one nats-server, a
// store that creates the events' stream (key-index-fixture.ts), a connection of the test's own,
// and the subject each stream path is stored on.

import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import type { EventStore, FeedBatch } from "../src/event-store.ts";
import { durableSubject } from "../src/jetstream/subjects.ts";
import { partitionOfPath } from "../src/partition.ts";
import { type KeyIndexFixture, startKeyIndexFixture } from "./key-index-fixture.ts";

export interface StoreFixture {
  readonly fx: KeyIndexFixture;
  /** The test's own connection, for messages the store would not send. */
  readonly nc: NatsConnection;
  subjectOf(path: string): string;
}

export function storeFixture(names: { readonly streamName: string; readonly subjectPrefix: string; readonly ephemeralPrefix: string; readonly partitionCount: number }): StoreFixture {
  let fx: KeyIndexFixture | undefined;
  let nc: NatsConnection | undefined;
  beforeAll(async () => {
    fx = await startKeyIndexFixture(names);
    nc = await fx.connect();
  }, 60_000);
  afterAll(async () => {
    await fx?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the store fixture is used before its beforeAll ran");
    return value;
  };
  return {
    get fx() {
      return started(fx);
    },
    get nc() {
      return started(nc);
    },
    subjectOf: (path) => durableSubject({ durablePrefix: names.subjectPrefix, ephemeralPrefix: names.ephemeralPrefix }, partitionOfPath(path, names.partitionCount), path),
  };
}

/** A user's note, the event these tests write. */
export const note = (content: string) => ({ type: "agents/context-added", payload: { role: "user", content } });

/** Each event's content (its payload as JSON when it has none). */
export const contents = (events: readonly { payload: unknown }[]) => events.map((e) => (e.payload as { content?: string }).content ?? JSON.stringify(e.payload));

/** The first `count` batches of one stream on its partition's feed, from the start. */
export async function feedBatchesOf(store: EventStore, path: string, count: number): Promise<FeedBatch[]> {
  const feed = store.feed({ partitions: [store.partitionOf(path)] });
  const batches: FeedBatch[] = [];
  try {
    for await (const batch of feed) {
      if (batch.streamPath === path) batches.push(batch);
      if (batches.length === count) break;
    }
  } finally {
    await feed.close();
  }
  return batches;
}
