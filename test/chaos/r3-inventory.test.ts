// Every stream, KV bucket and object store the system creates takes the configured replicas:
// on a 3-node cluster with NATS_STREAM_REPLICAS=3 nothing may stay R1, or it dies with one
// node (the capability host's buckets and work stream once did). KV buckets and object stores
// are JetStream streams (KV_*, OBJ_*), so listing the streams lists them all.

import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type System, startSystem, waitForAnswer } from "../support/system.ts";
import { createBareAgent, lastUserContent, say } from "../support/turns.ts";

let system: System;

beforeAll(async () => {
  system = await startSystem({
    cluster: true,
    hosts: 1,
    gateway: true,
    model: { defaultReply: (request) => ({ text: `answer to ${lastUserContent(request.body)}` }) },
  });
});

afterAll(async () => system?.stop());

describe("replicas everywhere", () => {
  it("creates every stream, KV bucket and object store with the configured replicas (R3)", async () => {
    // One turn first, so anything created on first use exists too.
    await createBareAgent(system.store, "/agents/r3/one");
    await say(system.store, "/agents/r3/one", "hello");
    await waitForAnswer(system, "/agents/r3/one", "answer to hello", 60_000);

    const jsm = await jetstreamManager(system.nc);
    const replicasByStream = new Map<string, number>();
    for await (const info of jsm.streams.list()) replicasByStream.set(info.config.name, info.config.num_replicas);

    // What each service creates at start: the event store and the work queues (one per kind),
    // the reducer's leases and snapshots, the host's agent KV, provider registry and files.
    for (const expected of ["AGENT_EVENTS", "AGENT_WORK_LLM", "AGENT_WORK_SCRIPT", "KV_agentrt_leases", "KV_agentrt_agent_snapshots"]) {
      expect([...replicasByStream.keys()], `expected stream ${expected}`).toContain(expected);
    }
    expect([...replicasByStream.keys()].filter((n) => n.startsWith("KV_")).length).toBeGreaterThanOrEqual(4);
    expect([...replicasByStream.keys()].filter((n) => n.startsWith("OBJ_")).length).toBeGreaterThanOrEqual(1);
    const notR3 = [...replicasByStream].filter(([, r]) => r !== 3).map(([name, r]) => `${name}: R${r}`);
    expect(notR3, `streams not at R3: ${notR3.join(", ")}`).toEqual([]);
  });
});
