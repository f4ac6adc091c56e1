// What the cluster tests share: an append retried while the cluster elects leaders (a
// retryable refusal is the store saying "not now", never "no"), so each acknowledged append is
// counted once, under the key that makes it idempotent.

import { type AgentEvent, AgentRuntimeError } from "@agentrt/contract";
import type { JetStreamEventStore } from "../src/jetstream/index.ts";
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
