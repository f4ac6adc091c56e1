// Two reducer replicas as real processes on a real nats-server: the replica that owns an
// agent's partition is SIGKILLed in the middle of a debounce window, and the request still
// appears exactly once, from the survivor, no earlier than the debounce allows.

import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { Kvm } from "@nats-io/kv";
import type { AgentEvent } from "@agentrt/contract";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const PARTITIONS = 4;
const DEBOUNCE_MS = 3000;

let server: NatsServer;
let nc: NatsConnection;
let store: JetStreamEventStore;
const replicas = new Map<string, ChildProcess>();

function startReplica(id: string): ChildProcess {
  // `node --import tsx` keeps the service in ONE process: a SIGKILL sent to the `tsx` wrapper
  // binary would leave its child running as an orphan, and the "dead" replica would live on.
  const child = spawn(process.execPath, ["--import", "tsx", join(root, "services/agent-reducer/src/main.ts")], {
    cwd: root,
    env: {
      ...process.env,
      NATS_URL: server.url,
      OPS_PORT: "0",
      PARTITION_COUNT: String(PARTITIONS),
      REDUCER_ID: id,
      REDUCER_LEASE_TTL_MS: "1500",
      LOG_LEVEL: process.env.REDUCER_TEST_LOG_LEVEL ?? "warn",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  replicas.set(id, child);
  return child;
}

async function leaseOwners(): Promise<Map<number, string>> {
  const kv = await new Kvm(nc).open("agentrt_leases");
  const owners = new Map<number, string>();
  for (let p = 0; p < PARTITIONS; p += 1) {
    const entry = await kv.get(`reducer.partition.${p}`);
    if (entry && entry.operation === "PUT") owners.set(p, (entry.json() as { owner: string }).owner);
  }
  return owners;
}

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  store = await JetStreamEventStore.open(nc, { partitionCount: PARTITIONS });
  startReplica("r1");
  startReplica("r2");
  await waitFor(
    async () => {
      const owners = await leaseOwners().catch(() => new Map<number, string>());
      const distinct = new Set(owners.values());
      return owners.size === PARTITIONS && distinct.has("r1") && distinct.has("r2");
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
});

afterAll(async () => {
  for (const child of replicas.values()) child.kill("SIGKILL");
  await store?.close();
  await nc?.close();
  await server?.stop();
});

describe("reducer replicas", () => {
  it("a replica killed mid-debounce: the request still appears exactly once", async () => {
    const owners = await leaseOwners();
    const path = "/agents/replicas/one";
    const victim = owners.get(store.partitionOf(path))!;
    const survivor = victim === "r1" ? "r2" : "r1";

    const live = store.subscribe(path, { ephemeral: true });
    const seen: AgentEvent[] = [];
    void (async () => {
      for await (const event of live) seen.push(event);
    })();

    await store.append(path, [
      { type: "agent/created", payload: {} },
      { type: "agent/configured", payload: { config: { llmRequestDebounceMs: DEBOUNCE_MS } } },
    ]);
    const userAppend = await store.append(path, [
      { type: "agents/context-added", payload: { role: "user", content: "hello", actor: { type: "user", origin: "web" } } },
    ]);
    const user = userAppend.events[0]!;
    // The owner has folded the message and armed its debounce timer when it publishes the
    // runtime transition with a pending trigger.
    await waitFor(
      () => seen.some((e) => e.type === "agent/runtime-changed" && e.payload.runtime.triggers.pending === 1),
      { timeoutMs: 10_000 },
    );
    replicas.get(victim)!.kill("SIGKILL");
    const killedAt = Date.now();

    await waitFor(async () => (await store.read(path)).some((e) => e.type === "agent/llm-request-requested"), {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    const takeoverMs = Date.now() - killedAt;

    // Let the survivor prove it has folded everything: it owns every partition and has
    // transcribed a sentinel error appended after the request.
    await waitFor(async () => [...(await leaseOwners()).values()].every((o) => o === survivor), { timeoutMs: 10_000 }).catch(async (error: unknown) => {
      process.stdout.write(`owners at failure: ${JSON.stringify([...(await leaseOwners()).entries()])} survivor=${survivor}\n`);
      throw error;
    });
    const sentinel = await store.append(path, [{ type: "stream/error-occurred", payload: { message: "sentinel" } }]);
    await waitFor(
      async () => (await store.read(path)).some((e) => e.idempotencyKey === `agent/transcribe-error@${sentinel.events[0]!.offset}`),
      { timeoutMs: 10_000 },
    ).catch(async (error: unknown) => {
      process.stdout.write(`stream at failure: ${JSON.stringify((await store.read(path)).map((e) => [e.offset, e.type, e.idempotencyKey]))}\n`);
      throw error;
    });

    const requests = (await store.read(path)).filter((e) => e.type === "agent/llm-request-requested");
    await live.close();
    process.stdout.write(`reducer takeover: request appeared ${takeoverMs} ms after the kill\n`);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.idempotencyKey).toBe(`agent/request/${user.offset}`);
    expect(Date.parse(requests[0]!.createdAt) - Date.parse(user.createdAt)).toBeGreaterThanOrEqual(DEBOUNCE_MS);
  });
});
