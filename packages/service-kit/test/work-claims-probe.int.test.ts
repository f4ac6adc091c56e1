// A claimant that dies while a presence probe to it is in flight is found gone by the next probe
// round, not when that probe times out. A busy claimant (a host whose main thread serves a
// script's host calls) answers probes late, so a probe is often in flight at the moment it is
// killed; the server never answers that probe, and waiting for its timeout made a killed host's
// scripts wait about half a second before anyone handed them back (issue 15's recovery figures).

import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { claimLivenessSubject, createLogger, startWorkClaims, workClaimsBucket } from "../src/index.ts";

const logger = createLogger("test", "silent");
let server: NatsServer;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  for (const c of connections) await c.close().catch(() => undefined);
  await server?.stop();
});

const client = async () => {
  const c = await connect({ servers: server.url });
  connections.push(c);
  return c;
};

it("given a claimant that answers probes slowly, when it dies with a probe in flight, then its items are handed back within a few probe periods, not at that probe's timeout", async () => {
  const PROBE_EVERY_MS = 100;
  const PROBE_TIMEOUT_MS = 4_000;
  const ANSWER_AFTER_MS = 3_000;
  // Given a claimant that holds one item and answers each presence probe 3 s late (alive, busy)
  const victim = await client();
  let probes = 0;
  victim.subscribe(claimLivenessSubject("llm", "busy-victim"), {
    callback: (_error, msg) => {
      probes += 1;
      setTimeout(() => msg.respond(), ANSWER_AFTER_MS);
    },
  });
  await victim.flush();
  const kv = await new Kvm(await client()).create(workClaimsBucket("llm"), { history: 1 });
  await kv.put("llm.busy-victim.held", JSON.stringify({ owner: "busy-victim", acks: ["$JS.ACK.AGENT_WORK_LLM.nobody.1.1.1.1.0"] }));
  // and a survivor that probes it every 100 ms, each probe counted alive unless refused within 4 s
  const handedBack: number[] = [];
  const survivor = await startWorkClaims({ nc: await client(), kind: "llm", owner: "survivor", logger, probeEveryMs: PROBE_EVERY_MS, probeTimeoutMs: PROBE_TIMEOUT_MS, onHandedBack: () => handedBack.push(Date.now()) });
  try {
    await waitFor(() => probes >= 1, { timeoutMs: 5_000, what: "a probe in flight to the victim" });
    await new Promise((r) => setTimeout(r, 500));
    // When the claimant dies (its connection closes) while that probe waits for its late answer
    await victim.close();
    const diedAt = Date.now();
    // Then a later probe is refused and its item handed back long before the first probe's answer was due
    await waitFor(() => handedBack.length === 1, { timeoutMs: 10_000, what: "the victim's item handed back" });
    const afterMs = (handedBack[0] as number) - diedAt;
    expect(afterMs).toBeLessThan(1_500);
    expect(await kv.get("llm.busy-victim.held").then((e) => e?.operation)).not.toBe("PUT");
  } finally {
    await survivor.stop();
  }
}, 30_000);
