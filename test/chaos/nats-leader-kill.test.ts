// Chaos: a 3-node NATS cluster with R3 streams; under load (ten agents talking and a writer
// appending probe events as fast as it can), the node leading the event stream is SIGKILLed.
// No acknowledged event may be lost, the services must reconnect, and every agent must go
// on answering. The longest stall seen by the writer and by a turn is reported.

import { jetstreamManager } from "@nats-io/jetstream";
import type { AgentEvent } from "@agentrt/contract";
import type { NatsCluster } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type System, startSystem, waitForAnswer } from "../support/system.ts";
import { userMessage } from "@agentrt/testing";
import { auditStream, createBareAgent, lastUserContent, sumAudits } from "../support/turns.ts";

const AGENTS = 10;
const TURNS = 4;
let cluster: NatsCluster;
let system: System;

beforeAll(async () => {
  system = await startSystem({
    cluster: true,
    reducers: 2,
    drivers: 2,
    model: { defaultReply: (request) => ({ text: `answer to ${lastUserContent(request.body)}`, tokensPerSecond: 50 }) },
  });
  cluster = system.cluster!;
});

afterAll(async () => system?.stop());

/** A read right after a failover may time out (retryable): try again for a while. */
async function readSurely(path: string): Promise<AgentEvent[]> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await system.store.read(path);
    } catch (error) {
      if (attempt >= 10 || !(error as { retryable?: boolean }).retryable) throw error;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

describe("chaos: the event stream's leader node dies under load", () => {
  it("loses no acknowledged event and the agents go on answering", async () => {
    const started = Date.now();
    const phase: Record<string, unknown> = {};
    const watchdog = setInterval(() => process.stdout.write(`nats-leader-kill at ${Math.round((Date.now() - started) / 1000)} s: ${JSON.stringify({ ...phase, acked: acked.length, n })}\n`), 20_000);
    const probePath = "/agents/chaos/probe";
    const acked: Array<{ offset: number; n: number }> = [];
    let writerStallMs = 0;
    let writing = true;
    let n = 0;
    const writer = (async () => {
      let last = Date.now();
      while (writing) {
        n += 1;
        try {
          const result = await system.store.append(probePath, [
            { type: "stream/error-occurred", payload: { message: `probe ${n}` }, idempotencyKey: `probe-${n}` },
          ]);
          acked.push({ offset: result.events[0]!.offset, n });
          writerStallMs = Math.max(writerStallMs, Date.now() - last);
          last = Date.now();
          await new Promise((r) => setTimeout(r, 5)); // a steady load, and a stream the audit can read back
        } catch {
          // Not acknowledged: the writer retries the same key, which may or may not have landed.
          n -= 1;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    })();

    let turnStallMs = 0;
    let killedNode = "";
    let killed = false;
    const jsm = await jetstreamManager(system.nc);
    const kill = async () => {
      const info = await jsm.streams.info("AGENT_EVENTS");
      killedNode = info.cluster?.leader ?? "";
      const node = cluster.nodes.find((s) => s.serverName === killedNode);
      expect(node, `leader ${killedNode} is one of the nodes`).toBeDefined();
      await node!.kill("SIGKILL");
      killed = true;
    };

    await Promise.all(
      Array.from({ length: AGENTS }, (_, i) => `/agents/chaos/nats-${i}`).map(async (path, i) => {
        await createBareAgent(system.store, path);
        for (let turn = 1; turn <= TURNS; turn += 1) {
          if (i === 0 && turn === 2) await kill();
          phase[path] = `turn ${turn}`;
          const message = `${path} message ${turn}`;
          let sent;
          for (;;) {
            try {
              // Keyed, as the probe writer's appends are: an append that timed out in the
              // election may have landed, and its retry must not add a second message (and
              // with it a second request) to the turn.
              const result = await system.store.append(path, [userMessage(message, `chaos/say/${turn}`)]);
              sent = result.events[0]!;
              break;
            } catch {
              await new Promise((r) => setTimeout(r, 100)); // the cluster is electing a leader
            }
          }
          const reply = await waitForAnswer(system, path, `answer to ${message}`, 90_000).catch(async (error: unknown) => {
            const again = await system.store.read(path, { fromOffset: sent.offset }).catch((e: unknown) => String(e));
            process.stdout.write(`SENT ${JSON.stringify(sent)}; re-read from its offset: ${JSON.stringify(again)}; lastOffset=${await system.store.lastOffset(path)}\n`);
            throw error;
          });
          turnStallMs = Math.max(turnStallMs, Date.parse(reply.createdAt) - Date.parse(sent.createdAt));
        }
      }),
    );
    const turnsDoneAt = Date.now();
    phase.turns = "done";
    writing = false;
    await writer;
    phase.writer = "done";

    // Every acknowledged probe is in the stream, at the offset it was acknowledged with.
    const probes = await readSurely(probePath);
    const probesReadAt = Date.now();
    phase.probes = "read";
    clearInterval(watchdog);
    const byOffset = new Map(probes.map((e) => [e.offset, e]));
    const lost = acked.filter((a) => (byOffset.get(a.offset)?.payload as { message?: string } | undefined)?.message !== `probe ${a.n}`).length;
    for (const a of acked.filter((x) => (byOffset.get(x.offset)?.payload as { message?: string } | undefined)?.message !== `probe ${x.n}`)) {
      const actual = probes.filter((e) => (e.payload as { message?: string }).message === `probe ${a.n}`).map((e) => e.offset);
      process.stdout.write(`LOST probe ${a.n}: acknowledged at offset ${a.offset}, stored there: ${JSON.stringify(byOffset.get(a.offset)?.payload)}; probe ${a.n} is stored at ${JSON.stringify(actual)}\n`);
    }
    const dense = probes.every((e, i) => e.offset === i + 1);
    // The writer retries an unacknowledged append with the same idempotency key: a key must
    // never be committed twice, failover or not.
    const keys = probes.map((e) => e.idempotencyKey);
    const duplicateKeys = keys.length - new Set(keys).size;
    const streams = await Promise.all(Array.from({ length: AGENTS }, (_, i) => readSurely(`/agents/chaos/nats-${i}`)));
    const audit = sumAudits(streams.map((events) => auditStream(events)));
    // A request count off by some: which stream, and what its user messages and requests were.
    for (const events of streams) {
      const users = events.filter((e) => e.type === "agents/context-added" && e.payload.role === "user");
      const requests = events.filter((e) => e.type === "agent/llm-request-requested");
      if (users.length !== TURNS || requests.length !== TURNS) {
        process.stdout.write(`UNEXPECTED ${events[0]?.streamPath}: ${JSON.stringify(events.map((e) => [e.offset, e.type, e.idempotencyKey ?? "", e.type === "agents/context-added" ? e.payload.content.slice(0, 40) : e.type === "agent/llm-request-settled" ? JSON.stringify(e.payload.result).slice(0, 120) : ""]))}\n`);
      }
    }
    const figures = {
      killedNode,
      acknowledgedProbes: acked.length,
      storedProbes: probes.length,
      lost,
      duplicateKeys,
      requests: audit.requests,
      settlements: audit.settlements,
      lostSettlements: audit.lost,
      duplicated: audit.duplicated,
      longestWriterStallMs: writerStallMs,
      longestTurnMs: turnStallMs,
      // Where the time went, for a run that is slow.
      turnsMs: turnsDoneAt - started,
      readProbesMs: probesReadAt - turnsDoneAt,
      auditMs: Date.now() - probesReadAt,
    };
    process.stdout.write(`chaos/nats-leader-kill ${JSON.stringify(figures)}\n`);
    expect(killed).toBe(true);
    expect(lost).toBe(0);
    expect(dense).toBe(true);
    expect(duplicateKeys).toBe(0);
    expect(audit.lost).toBe(0);
    expect(audit.violations).toBe(0);
    expect(audit.duplicated).toBe(0);
    expect(audit.requests).toBe(AGENTS * TURNS);
  });
});
