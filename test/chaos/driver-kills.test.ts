// Chaos: 50 turns across 10 agents while one loop SIGKILLs a random llm-driver every few
// seconds (and starts a fresh incarnation), and another freezes a driver with SIGSTOP and
// thaws it with SIGCONT only after every request it could have been running has settled
// elsewhere. Every request must settle exactly once, no assistant item may be duplicated,
// and every agent must answer every message.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type System, startSystem } from "../support/system.ts";
import { prng } from "@agentrt/testing";
import { auditStream, createBareAgent, lastUserContent, say, sumAudits, waitForAssistant } from "../support/turns.ts";

const AGENTS = 10;
const TURNS = 5;
const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 100_000);
const random = prng(seed);
let system: System;

beforeAll(async () => {
  system = await startSystem({
    reducers: 2,
    drivers: 3,
    model: {
      defaultReply: (request) => ({
        text: `answer to ${lastUserContent(request.body)} — streamed in many small tokens, slowly enough that kills and freezes land in the middle of a reply`,
        tokensPerSecond: 20,
      }),
    },
    env: { LLM_WORK_ACK_WAIT_MS: "2000", LLM_WORK_HEARTBEAT_MS: "300" },
  });
});

afterAll(async () => {
  await system?.stop();
});

describe("chaos: drivers killed and frozen mid-stream", () => {
  it("settles every request exactly once and answers every message", async () => {
    const drivers = system.processes.byService("llm-driver");
    const paths = Array.from({ length: AGENTS }, (_, i) => `/agents/chaos/driver-${i}`);
    let kills = 0;
    let freezes = 0;
    let running = true;

    const killer = (async () => {
      while (running) {
        await new Promise((r) => setTimeout(r, 1000 + random() * 1500));
        if (!running) break;
        // Only a driver that is serving is worth killing, and never the last one serving: on
        // two shared cores a fresh incarnation needs seconds to boot.
        const serving = drivers.filter((d) => d.ready);
        if (serving.length < 2) continue;
        const victim = serving[Math.floor(random() * serving.length)]!;
        await victim.signal("SIGCONT");
        await victim.signal("SIGKILL");
        victim.start();
        kills += 1;
        void victim.waitReady(120_000).catch(() => undefined);
      }
    })();

    const freezer = (async () => {
      while (running) {
        await new Promise((r) => setTimeout(r, 3000 + random() * 2000));
        if (!running) break;
        const serving = drivers.filter((d) => d.ready);
        if (serving.length < 2) continue;
        const victim = serving[Math.floor(random() * serving.length)]!;
        // Whatever it may be running now must be settled by a successor before it wakes.
        const open: Array<[string, number]> = [];
        for (const path of paths) {
          const events = await system.store.read(path);
          const settled = new Set(events.filter((e) => e.type === "agent/llm-request-settled").map((e) => (e.payload as { requestOffset: number }).requestOffset));
          for (const e of events) if (e.type === "agent/llm-request-requested" && !settled.has(e.offset)) open.push([path, e.offset]);
        }
        await victim.signal("SIGSTOP");
        freezes += 1;
        const deadline = Date.now() + 20_000;
        while (Date.now() < deadline) {
          let pending = 0;
          for (const [path, offset] of open) {
            const events = await system.store.read(path, { fromOffset: offset });
            if (!events.some((e) => e.type === "agent/llm-request-settled" && e.payload.requestOffset === offset)) pending += 1;
          }
          if (pending === 0) break;
          await new Promise((r) => setTimeout(r, 200));
        }
        await victim.signal("SIGCONT");
      }
    })();

    let longestStallMs = 0;
    let turns = 0;
    const faultsShort = (): boolean => kills < 3 || freezes < 1;
    const started = Date.now();
    await Promise.all(
      paths.map(async (path) => {
        await createBareAgent(system.store, path);
        // At least TURNS each, and on until the faults the test is about have landed: a fast run
        // can finish its TURNS before the killer's third kill (up to 4 × TURNS).
        for (let turn = 1; turn <= TURNS || (faultsShort() && turn <= 4 * TURNS); turn += 1) {
          turns += 1;
          const message = `${path} message ${turn}`;
          const sent = await say(system.store, path, message);
          const reply = await waitForAssistant(system.store, path, `answer to ${message}`, 90_000).catch(async (error: unknown) => {
            const events = await system.store.read(path);
            process.stdout.write(`STUCK ${path} turn ${turn}: ${JSON.stringify(events.map((e) => [e.offset, e.type, e.idempotencyKey ?? ""]))}\n`);
            process.stdout.write(system.processes.logs().split("\n").filter((l) => /"level":(40|50|60)/.test(l)).slice(-40).join("\n") + "\n");
            throw error;
          });
          longestStallMs = Math.max(longestStallMs, Date.parse(reply.createdAt) - Date.parse(sent.createdAt));
        }
      }),
    );
    running = false;
    await Promise.all([killer, freezer]);
    // Thawed zombies may still try to settle: give every driver time to finish and fail to.
    for (const driver of drivers) await driver.signal("SIGCONT");
    await new Promise((r) => setTimeout(r, 3000));

    const audit = sumAudits(await Promise.all(paths.map(async (p) => auditStream(await system.store.read(p)))));
    const figures = {
      seed,
      seconds: Math.round((Date.now() - started) / 1000),
      kills,
      freezes,
      turns,
      requests: audit.requests,
      settlements: audit.settlements,
      violations: audit.violations,
      lost: audit.lost,
      duplicated: audit.duplicated,
      longestStallMs,
    };
    process.stdout.write(`chaos/driver-kills ${JSON.stringify(figures)}\n`);
    expect(kills).toBeGreaterThanOrEqual(3);
    expect(freezes).toBeGreaterThan(0);
    expect(audit.lost).toBe(0);
    expect(audit.violations).toBe(0);
    expect(audit.duplicated).toBe(0);
    expect(audit.requests).toBeGreaterThanOrEqual(AGENTS * TURNS);
  });
});
