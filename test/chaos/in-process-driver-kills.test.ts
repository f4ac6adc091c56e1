// Chaos: two reducer replicas that each run their llm-driver in their own process
// (REDUCER_LLM_DRIVER=in-process, no other driver), SIGKILLed in turn and restarted while six
// agents talk to a model that streams slowly enough for kills to land mid-reply. A request
// handed to a driver in its reducer's process has no work item: when that process dies, the
// replica that takes its partitions over must drive the request again, with the default
// settings. Every request must settle exactly once, and every message must be answered.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type System, startSystem, waitForAnswer } from "../support/system.ts";
import { prng } from "@agentrt/testing";
import { killInTurn } from "../support/kills.ts";
import { auditStream, createBareAgent, lastUserContent, say, sumAudits } from "../support/turns.ts";

const AGENTS = 6;
const TURNS = 8;
const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 100_000);
const random = prng(seed);
let system: System;

beforeAll(async () => {
  system = await startSystem({
    reducers: 2,
    drivers: 0,
    model: {
      defaultReply: (request) => ({ text: `answer to ${lastUserContent(request.body)} — streamed in small tokens so that kills land in the middle of a reply`, tokensPerSecond: 15 }),
    },
    env: { REDUCER_LLM_DRIVER: "in-process" },
  });
});

afterAll(async () => {
  await system?.stop();
});

describe("chaos: reducers running their drivers in their own processes, killed mid-reply", () => {
  it("settles every request exactly once and answers every message", async () => {
    const reducers = system.processes.byService("agent-reducer");
    const paths = Array.from({ length: AGENTS }, (_, i) => `/agents/chaos/in-process-${i}`);
    const killer = killInTurn(reducers, () => 1500 + random() * 1500);
    let kills = 0;
    try {
      await Promise.all(
        paths.map(async (path, agent) => {
          await createBareAgent(system.store, path, 0);
          for (let turn = 0; turn < TURNS; turn += 1) {
            const content = `agent ${agent} turn ${turn}`;
            await say(system.store, path, content);
            await waitForAnswer(system, path, `answer to ${content}`, 90_000);
          }
        }),
      );
    } finally {
      kills = await killer.stop();
    }
    const audit = sumAudits(await Promise.all(paths.map(async (p) => auditStream(await system.store.read(p)))));
    process.stdout.write(`in-process driver chaos (seed ${seed}): ${kills} kills, ${JSON.stringify(audit)}\n`);
    expect(kills).toBeGreaterThanOrEqual(2);
    expect(audit.requests).toBe(AGENTS * TURNS);
    expect(audit.settlements).toBe(AGENTS * TURNS);
    expect(audit.duplicated).toBe(0);
    expect(audit.lost).toBe(0);
    expect(audit.violations).toBe(0);
  }, 240_000);
});
