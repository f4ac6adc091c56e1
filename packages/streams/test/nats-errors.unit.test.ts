// How NATS failures are classified for every store operation: what a caller may retry.

import { JetStreamApiError } from "@nats-io/jetstream";
import { errors } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { classifyNatsError } from "../src/jetstream/errors.ts";
import { PublishRejectedError } from "../src/jetstream/publisher.ts";

describe("classifyNatsError", () => {
  it("makes a read whose own consumer vanished (a NATS node lost it) retryable", () => {
    // Given the error a read's fetch throws when its ephemeral consumer is gone (the chaos soak:
    // it ended the run as a non-retryable `internal` failure)
    const vanished = new JetStreamApiError({ code: 404, err_code: 10014, description: "consumer not found" });
    // When it is classified
    const classified = classifyNatsError(vanished, "read /agents/a");
    // Then a caller may read again
    expect(classified).toMatchObject({ code: "unavailable", retryable: true });
  });

  it("makes a read answered 'stream not found' by a cluster mid-election retryable", () => {
    // Given what a replicated stream's get or consumer creation is answered by a node that has
    // not caught up with the meta leader (the long soak: a driver dropped its item on it)
    const electing = new JetStreamApiError({ code: 404, err_code: 10059, description: "stream not found" });
    // When it is classified, then the read may be tried again rather than the work dropped
    expect(classifyNatsError(electing, "read /agents/a")).toMatchObject({ code: "unavailable", retryable: true });
  });

  it("makes a publish that found no JetStream responder (a leaderless stream or bucket) retryable", () => {
    // Given what the client throws when a key reservation's KV publish finds no leader (the soak in CI)
    const noResponders = new errors.RequestError("no responders", { cause: new errors.NoRespondersError("$KV.AGENT_EVENTS_KEYS.k") });
    const notEnabled = Object.assign(new Error("jetstream is not enabled", { cause: noResponders }), { name: "JetStreamNotEnabled" });
    // Then an append may be tried again, as for any other NATS outage
    expect(classifyNatsError(notEnabled, "append")).toMatchObject({ code: "unavailable", retryable: true });
    // A "not enabled" for any other reason stays what it is
    expect(classifyNatsError(Object.assign(new Error("jetstream is not enabled"), { name: "JetStreamNotEnabled" }), "append")).toMatchObject({ code: "internal" });
  });

  it("makes a publish refused because the store is full retryable: it clears once space is freed", () => {
    // Given what JetStream answers a publish to a full store (a server with max_file_store reached)
    const full = new PublishRejectedError(503, 10023, "insufficient resources");
    // When it is classified, then the append is retried (a reaction kept, a work item naked, a 503 to clients)
    expect(classifyNatsError(full, "append /agents/a")).toMatchObject({ code: "unavailable", retryable: true });
    expect(classifyNatsError(new PublishRejectedError(500, 10047, "storage resources exceeded"), "append")).toMatchObject({ code: "unavailable", retryable: true });
    expect(classifyNatsError(new JetStreamApiError({ code: 500, err_code: 10028, description: "insufficient memory resources available" }), "create")).toMatchObject({ code: "unavailable", retryable: true });
    // A refusal that retrying cannot clear stays final
    expect(classifyNatsError(new PublishRejectedError(400, 10054, "message size exceeds maximum allowed"), "append")).toMatchObject({ code: "internal", retryable: false });
  });

  it("keeps timeouts retryable and other refusals not", () => {
    expect(classifyNatsError(new errors.TimeoutError(), "read")).toMatchObject({ code: "unavailable", retryable: true });
    const refused = new JetStreamApiError({ code: 400, err_code: 10058, description: "stream name already in use with a different configuration" });
    expect(classifyNatsError(refused, "open")).toMatchObject({ code: "internal", retryable: false });
  });
});
