// What the cluster tests share: a 3-node cluster with an R3 store on a client of every node,
// and an append retried while the cluster elects leaders (a retryable refusal is the store
// saying "not now", never "no"), so each acknowledged append is counted once, under the key
// that makes it idempotent.

import { type AgentEvent, AgentRuntimeError } from "@agentrt/contract";
import { type NatsCluster, startNatsCluster } from "@agentrt/testing";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { JetStreamEventStore } from "../src/jetstream/index.ts";
import { note } from "./event-store-suite.ts";

/** Appends one keyed note until the store acknowledges it; a terminal error is thrown. */
export async function appendUntilAcked(store: JetStreamEventStore, path: string, key: string, retryDelayMs = 0): Promise<AgentEvent> {
  for (;;) {
    try {
      return (await store.append(path, [note(key, key)])).events[0] as AgentEvent;
    } catch (error) {
      if (!(error instanceof AgentRuntimeError && error.retryable)) throw error;
      if (retryDelayMs > 0) await new Promise((r) => setTimeout(r, retryDelayMs));
    }
  }
}

export interface ClusterStore {
  readonly cluster: NatsCluster;
  readonly nc: NatsConnection;
  /** R3, with a short publish timeout so an append during an election fails (retryably) fast. */
  readonly store: JetStreamEventStore;
  stop(): Promise<void>;
}

export async function startClusterStore(): Promise<ClusterStore> {
  const cluster = await startNatsCluster({ nodes: 3 });
  const nc = await connect({ servers: [...cluster.servers], maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const store = await JetStreamEventStore.open(nc, { replicas: 3, publishTimeoutMs: 2_000 });
  return {
    cluster,
    nc,
    store,
    async stop() {
      await nc.close();
      await cluster.stop();
    },
  };
}

/**
 * A follower as the services write one: follows the feed, and follows it again from its last
 * batch when it ends (retryably, when no new consumer can be made during an election).
 * `stop()` makes it leave after its next batch (append one more event to wake it).
 */
export function followFeed(store: JetStreamEventStore, onEvent: (event: AgentEvent) => void): { stop(): void; readonly done: Promise<void>; readonly ends: number } {
  let following = true;
  let ends = 0;
  const done = (async () => {
    let after = 0;
    while (following) {
      const feed = store.feed({ afterSequence: after });
      try {
        for await (const batch of feed) {
          after = batch.sequence;
          for (const event of batch.events) onEvent(event);
          if (!following) break;
        }
      } catch {
        // ended retryably: follow again
      }
      ends += 1;
      await feed.close();
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    stop: () => {
      following = false;
    },
    done,
    get ends() {
      return ends;
    },
  };
}
