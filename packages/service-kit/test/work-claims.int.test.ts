// Work claims on a real nats-server, with the claimant in its own process so it can be killed
// or frozen like a real driver: a killed claimant's item reaches a survivor within a probe
// round (the ack wait here is far longer, so only presence can explain it) and is acked by the
// survivor's run; a frozen one keeps its item until the ack wait, because its subscription stays.

import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  claimLivenessSubject,
  consumeWork,
  createLogger,
  DEFAULT_CLAIM_PROBE_MS,
  ensureWorkStreams,
  publishWork,
  startWorkClaims,
  workClaimsBucket,
  workStreamName,
  type WorkClaims,
  type WorkConsumer,
} from "../src/index.ts";

const logger = createLogger("test", "silent");
let server: NatsServer;
let nc: NatsConnection;
const children: ChildProcess[] = [];
const stops: Array<() => Promise<void>> = [];

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  await ensureWorkStreams(await jetstreamManager(nc));
});
afterEach(async () => {
  for (const child of children.splice(0)) {
    child.kill("SIGCONT");
    child.kill("SIGKILL");
  }
  for (const stop of stops.splice(0)) await stop();
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

async function claimantProcess(durable: string, owner: string, ackWaitMs: number, heartbeatMs: number): Promise<{ child: ChildProcess; claimed: unknown[] }> {
  const script = join(dirname(fileURLToPath(import.meta.url)), "support", "work-claimant.ts");
  const child = spawn(process.execPath, ["--import", "tsx", script, server.url, durable, owner, String(ackWaitMs), String(heartbeatMs)], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  const claimed: unknown[] = [];
  let ready = false;
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const message = JSON.parse(line) as { claimed?: unknown; ready?: boolean };
    if (message.claimed !== undefined) claimed.push(message.claimed);
    if (message.ready === true) ready = true;
  });
  await waitFor(() => ready, { timeoutMs: 60_000, what: "the claimant process to start" });
  return { child, claimed };
}

/** A survivor in this process: records when each item reached it and acks it. */
async function survivor(durable: string, owner: string, ackWaitMs: number, probeEveryMs?: number): Promise<{ claims: WorkClaims; received: number[]; handedBack: string[]; consumer: WorkConsumer }> {
  const c = await connect({ servers: server.url });
  const received: number[] = [];
  const handedBack: string[] = [];
  const claims = await startWorkClaims({ nc: c, kind: "llm", owner, logger, onHandedBack: (who) => handedBack.push(who), ...(probeEveryMs === undefined ? {} : { probeEveryMs }) });
  const consumer = await consumeWork(jetstream(c), await jetstreamManager(c), {
    kind: "llm",
    durable,
    logger,
    claims,
    ackWaitMs,
    handler: async () => {
      received.push(Date.now());
      return { type: "ack" };
    },
  });
  stops.push(async () => {
    await consumer.stop();
    await claims.stop();
    // A work-queue stream allows one consumer per subject filter: free "work.llm.>" for the next test.
    await (await jetstreamManager(c)).consumers.delete(workStreamName("llm"), durable);
    await c.close();
  });
  return { claims, received, handedBack, consumer };
}

async function claimKeys(prefix: string): Promise<string[]> {
  const kv = await new Kvm(nc).open(workClaimsBucket("llm"));
  const keys: string[] = [];
  for await (const key of await kv.keys(`${prefix}.>`)) keys.push(key);
  return keys;
}

async function consumerDrained(durable: string): Promise<boolean> {
  const info = await (await jetstreamManager(nc)).consumers.info(workStreamName("llm"), durable);
  return info.num_ack_pending === 0 && info.num_pending === 0;
}

describe("work claims", { timeout: 120_000 }, () => {
  it("hand a killed claimant's item to a survivor within a probe round, far inside the ack wait, and the survivor's run acks it", async () => {
    const durable = "claims-kill";
    const ACK_WAIT_MS = 20_000;
    const victim = await claimantProcess(durable, "victim", ACK_WAIT_MS, 5_000);
    await publishWork(jetstream(nc), "llm", 1, { streamPath: "/a/claims-kill", requestOffset: 3 });
    await waitFor(() => victim.claimed.length === 1, { timeoutMs: 10_000, what: "the victim to claim the item" });
    await waitFor(async () => (await claimKeys("llm.victim")).length === 1, { timeoutMs: 10_000, what: "the victim's claim" });
    // The survivor starts after the claim: it learns of it from the bucket, as a restarted driver would.
    const alive = await survivor(durable, "survivor", ACK_WAIT_MS);
    victim.child.kill("SIGKILL");
    const killedAt = Date.now();

    await waitFor(() => alive.received.length === 1, { timeoutMs: 10_000, what: "the survivor to receive the item" });
    const recoveryMs = (alive.received[0] as number) - killedAt;
    process.stdout.write(`work claim: claimant killed -> item at the survivor: ${recoveryMs} ms (probe ${DEFAULT_CLAIM_PROBE_MS} ms, ack wait ${ACK_WAIT_MS} ms)\n`);
    // Presence, not redelivery: the ack wait is 20 s.
    expect(recoveryMs).toBeLessThan(3_000);
    expect(alive.handedBack).toEqual(["victim"]);
    // The survivor's run acked it: nothing pending, nothing left to redeliver, no claims left.
    await waitFor(() => consumerDrained(durable), { timeoutMs: 5_000, what: "the item to be acked" });
    await waitFor(async () => (await claimKeys("llm.victim")).length === 0 && (await claimKeys("llm.survivor")).length === 0, { timeoutMs: 5_000, what: "the claims to be removed" });
    expect(alive.received).toHaveLength(1);
  });

  it("hand a dead claimant's item back as soon as a worker starts (a restarted sole worker), not a probe period later", async () => {
    const durable = "claims-restart";
    const ACK_WAIT_MS = 20_000;
    // Neither the probe period nor the ack wait can explain a hand-back within the bound.
    const PROBE_EVERY_MS = 60_000;
    const victim = await claimantProcess(durable, "predecessor", ACK_WAIT_MS, 5_000);
    await publishWork(jetstream(nc), "llm", 1, { streamPath: "/a/claims-restart", requestOffset: 3 });
    await waitFor(() => victim.claimed.length === 1, { timeoutMs: 10_000, what: "the predecessor to claim the item" });
    await waitFor(async () => (await claimKeys("llm.predecessor")).length === 1, { timeoutMs: 10_000, what: "the predecessor's claim" });
    const exited = new Promise((resolve) => victim.child.once("exit", resolve));
    victim.child.kill("SIGKILL");
    await exited;

    // The only worker left starts after the kill, as a supervisor restarts a sole driver.
    const startedAt = Date.now();
    const successor = await survivor(durable, "successor", ACK_WAIT_MS, PROBE_EVERY_MS);
    await waitFor(() => successor.received.length === 1, { timeoutMs: 15_000, what: "the successor to receive the item" });
    const ms = (successor.received[0] as number) - startedAt;
    process.stdout.write(`work claim: worker started after its predecessor's kill -> item received: ${ms} ms (probe ${PROBE_EVERY_MS} ms, ack wait ${ACK_WAIT_MS} ms)\n`);
    expect(ms).toBeLessThan(3_000);
    expect(successor.handedBack).toEqual(["predecessor"]);
    await waitFor(() => consumerDrained(durable), { timeoutMs: 5_000, what: "the item to be acked" });
  });

  it("hand back every item a killed claimant held, from its one key", async () => {
    const durable = "claims-kill-many";
    const ACK_WAIT_MS = 20_000;
    const ITEMS = 3;
    const victim = await claimantProcess(durable, "victim-many", ACK_WAIT_MS, 5_000);
    for (let i = 0; i < ITEMS; i++) await publishWork(jetstream(nc), "llm", i + 1, { streamPath: `/a/claims-kill-many-${i}`, requestOffset: 3 });
    await waitFor(() => victim.claimed.length === ITEMS, { timeoutMs: 10_000, what: "the victim to claim every item" });
    const kv = await new Kvm(nc).open(workClaimsBucket("llm"));
    await waitFor(async () => (await kv.get("llm.victim-many.held"))?.json<{ acks: string[] }>().acks.length === ITEMS, { timeoutMs: 10_000, what: "the victim's claims" });
    const alive = await survivor(durable, "survivor-many", ACK_WAIT_MS);
    victim.child.kill("SIGKILL");
    const killedAt = Date.now();

    await waitFor(() => alive.received.length === ITEMS, { timeoutMs: 10_000, what: "the survivor to receive every item" });
    // Presence, not redelivery: the ack wait is 20 s.
    expect(Math.max(...alive.received) - killedAt).toBeLessThan(3_000);
    expect(alive.handedBack).toEqual(Array.from({ length: ITEMS }, () => "victim-many"));
    await waitFor(() => consumerDrained(durable), { timeoutMs: 5_000, what: "the items to be acked" });
    await waitFor(async () => (await claimKeys("llm.victim-many")).length === 0 && (await claimKeys("llm.survivor-many")).length === 0, { timeoutMs: 5_000, what: "the claims to be removed" });
  });

  it("leave a frozen claimant's item alone (its subscription stays): only the ack wait moves it", async () => {
    const durable = "claims-freeze";
    const ACK_WAIT_MS = 3_000;
    const HEARTBEAT_MS = 500;
    const frozen = await claimantProcess(durable, "frozen", ACK_WAIT_MS, HEARTBEAT_MS);
    await publishWork(jetstream(nc), "llm", 1, { streamPath: "/a/claims-freeze", requestOffset: 3 });
    await waitFor(() => frozen.claimed.length === 1, { timeoutMs: 10_000, what: "the claimant to claim the item" });
    await waitFor(async () => (await claimKeys("llm.frozen")).length === 1, { timeoutMs: 10_000, what: "the claim" });
    const alive = await survivor(durable, "watcher", ACK_WAIT_MS);
    frozen.child.kill("SIGSTOP");
    const stoppedAt = Date.now();
    // Probed as alive meanwhile: a frozen process does not answer, but it is not "no responders".
    await expect(alive.claims.isAlive("frozen")).resolves.toBe(true);

    await waitFor(() => alive.received.length === 1, { timeoutMs: 15_000, what: "the ack wait to redeliver the item" });
    // Its last heartbeat was at most one period before the stop: the item moved by the ack wait, not by presence.
    expect((alive.received[0] as number) - stoppedAt).toBeGreaterThanOrEqual(ACK_WAIT_MS - HEARTBEAT_MS - 100);
    expect(alive.handedBack).toEqual([]);
  });

  it("record 50 items taken at once with a few writes, not a put and a delete per item", async () => {
    const durable = "claims-writes";
    const ITEMS = 50;
    const c = await connect({ servers: server.url });
    const claims = await startWorkClaims({ nc: c, kind: "llm", owner: "busy", logger });
    const claimsStream = `KV_${workClaimsBucket("llm")}`;
    const lastSeq = async () => (await (await jetstreamManager(nc)).streams.info(claimsStream)).state.last_seq;
    const before = await lastSeq();
    for (let i = 0; i < ITEMS; i++) await publishWork(jetstream(nc), "llm", i + 1, { streamPath: `/a/claims-writes-${i}`, requestOffset: 3 });
    let received = 0;
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const consumer = await consumeWork(jetstream(c), await jetstreamManager(c), {
      kind: "llm",
      durable,
      logger,
      claims,
      concurrency: ITEMS,
      handler: async () => {
        received++;
        await finished;
        return { type: "ack" };
      },
    });
    stops.push(async () => {
      finish();
      await consumer.stop();
      await claims.stop();
      await (await jetstreamManager(c)).consumers.delete(workStreamName("llm"), durable);
      await c.close();
    });

    await waitFor(() => received === ITEMS, { timeoutMs: 10_000, what: "every item to be taken" });
    // Every item is recorded: a survivor would hand all of them back.
    const kv = await new Kvm(nc).open(workClaimsBucket("llm"));
    const recorded = async () => {
      const acks = new Set<string>();
      for (const key of await claimKeys("llm.busy")) {
        const value = (await kv.get(key))?.json<{ ack?: string; acks?: string[] }>();
        for (const ack of [...(value?.acks ?? []), ...(value?.ack === undefined ? [] : [value.ack])]) acks.add(ack);
      }
      return acks.size;
    };
    await waitFor(async () => (await recorded()) === ITEMS, { timeoutMs: 5_000, what: "all items in the claims" });
    finish();
    await waitFor(() => consumerDrained(durable), { timeoutMs: 5_000, what: "the items to be acked" });
    await waitFor(async () => (await claimKeys("llm.busy")).length === 0, { timeoutMs: 5_000, what: "the claims to be removed once idle" });

    const writes = (await lastSeq()) - before;
    process.stdout.write(`work claims: ${ITEMS} concurrent items -> ${writes} KV writes\n`);
    // A put and a delete per item would be 100.
    expect(writes).toBeLessThanOrEqual(10);
  });

  it("answer probes only while the worker runs", async () => {
    const c = await connect({ servers: server.url });
    const claims = await startWorkClaims({ nc: c, kind: "script", owner: "host.one", logger });
    await expect(nc.request(claimLivenessSubject("script", "host.one"), undefined, { timeout: 2_000 })).resolves.toBeDefined();
    const other = await startWorkClaims({ nc, kind: "script", owner: "host.two", logger });
    await expect(other.isAlive("host.one")).resolves.toBe(true);
    await claims.stop();
    await c.close();
    await expect(other.isAlive("host.one")).resolves.toBe(false);
    await other.stop();
  });
});
