// Chaos: three reducer replicas are SIGKILLed in turn (and restarted) while ten agents talk
// with a one-second debounce, so kills land inside debounce windows. Every trigger must get
// exactly one request, and every message an answer.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type System, startSystem, waitForAnswer } from "../support/system.ts";
import { prng } from "@agentrt/testing";
import { killInTurn } from "../support/kills.ts";
import { auditStream, createBareAgent, lastUserContent, say, sumAudits } from "../support/turns.ts";

const AGENTS = 10;
const TURNS = 5;
const DEBOUNCE_MS = 1000;
const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 100_000);
const random = prng(seed);
let system: System;

beforeAll(async () => {
  system = await startSystem({
    reducers: 3,
    drivers: 2,
    model: { defaultReply: (request) => ({ text: `answer to ${lastUserContent(request.body)}` }) },
  });
});

afterAll(async () => {
  await system?.stop();
});

describe("chaos: reducer replicas killed during debounce windows", () => {
  it("gives every trigger exactly one request", async () => {
    const reducers = system.processes.byService("agent-reducer");
    const paths = Array.from({ length: AGENTS }, (_, i) => `/agents/chaos/reducer-${i}`);
    // In turn: the next replica in rotation that is serving, never the last one serving.
    const killer = killInTurn(reducers, () => 1000 + random() * 1500);

    const triggers: Array<[string, number]> = [];
    let longestStallMs = 0;
    const started = Date.now();
    await Promise.all(
      paths.map(async (path) => {
        await createBareAgent(system.store, path, DEBOUNCE_MS);
        // At least TURNS turns, and on until three kills have landed: a failover is now fast
        // enough that five turns can end before the third kill.
        for (let turn = 1; turn <= TURNS || (killer.kills < 3 && turn <= 10 * TURNS); turn += 1) {
          const message = `${path} message ${turn}`;
          const sent = await say(system.store, path, message);
          triggers.push([path, sent.offset]);
          const reply = await waitForAnswer(system, path, `answer to ${message}`, 90_000);
          longestStallMs = Math.max(longestStallMs, Date.parse(reply.createdAt) - Date.parse(sent.createdAt));
        }
      }),
    );
    const kills = await killer.stop();

    let missing = 0;
    let duplicated = 0;
    for (const [path, offset] of triggers) {
      const requests = (await system.store.read(path)).filter(
        (e) => e.type === "agent/llm-request-requested" && e.idempotencyKey === `agent/request/${offset}`,
      );
      if (requests.length === 0) missing += 1;
      if (requests.length > 1) duplicated += requests.length - 1;
    }
    const audit = sumAudits(await Promise.all(paths.map(async (p) => auditStream(await system.store.read(p)))));
    const figures = {
      seed,
      seconds: Math.round((Date.now() - started) / 1000),
      kills,
      triggers: triggers.length,
      requests: audit.requests,
      settlements: audit.settlements,
      missing,
      lost: audit.lost,
      duplicated: duplicated + audit.duplicated,
      longestStallMs,
    };
    process.stdout.write(`chaos/reducer-kills ${JSON.stringify(figures)}\n`);
    expect(kills).toBeGreaterThanOrEqual(3);
    expect(missing).toBe(0);
    expect(figures.duplicated).toBe(0);
    expect(audit.lost).toBe(0);
    expect(audit.violations).toBe(0);
    expect(audit.requests).toBe(triggers.length);
    expect(triggers.length).toBeGreaterThanOrEqual(AGENTS * TURNS);
  });
});
