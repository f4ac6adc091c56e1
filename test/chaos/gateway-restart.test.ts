// Chaos: the web-gateway is SIGKILLed and restarted (twice) while 100 live subscribers (half
// SSE, half WebSocket) follow one agent stream that a writer keeps appending to. Every
// subscriber must resume from its last offset with no gap and no duplicate.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveFollower, checkSequence, resumingFollower, waitFor } from "@agentrt/testing";
import { type System, startSystem } from "../support/system.ts";

const SUBSCRIBERS = 100;
let system: System;

beforeAll(async () => {
  // All subscribers come from one loopback address, which dev mode's live-subscription cap counts together.
  system = await startSystem({ reducers: 0, drivers: 0, gateway: true, env: { MAX_LIVE_SUBSCRIPTIONS_PER_KEY: String(SUBSCRIBERS) } });
});
afterAll(async () => system?.stop());

describe("chaos: the gateway restarts under live subscribers", () => {
  it("every subscriber resumes from its last offset with no gap and no duplicate", async () => {
    const path = "/agents/chaos/gateway";
    await system.store.append(path, [{ type: "agent/created", payload: {} }]);
    const gateway = system.processes.byService("web-gateway")[0]!;
    const clients: LiveFollower[] = Array.from({ length: SUBSCRIBERS }, (_, i) => resumingFollower(system.gatewayUrl!, i % 2 === 0 ? "sse" : "ws", path));
    let writing = true;
    let appended = 1;
    const writer = (async () => {
      while (writing) {
        await system.store.append(path, [{ type: "agent/summary-updated", payload: { activity: `step ${appended}` } }]);
        appended += 1;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    await waitFor(() => clients.every((c) => c.received.length > 5), { timeoutMs: 30_000 });
    let longestOutageMs = 0;
    for (let restart = 0; restart < 2; restart += 1) {
      await gateway.signal("SIGKILL");
      const down = Date.now();
      await new Promise((r) => setTimeout(r, 500)); // subscribers see their connections drop
      gateway.start();
      await gateway.waitReady(60_000);
      const before = appended;
      // Everyone has caught up past the restart.
      await waitFor(() => clients.every((c) => (c.received.at(-1) ?? 0) >= before), { timeoutMs: 60_000 });
      longestOutageMs = Math.max(longestOutageMs, Date.now() - down);
    }
    writing = false;
    await writer;
    const last = await system.store.lastOffset(path);
    await waitFor(() => clients.every((c) => c.received.at(-1) === last), { timeoutMs: 30_000 });
    for (const c of clients) c.close();

    const results = clients.map((c) => checkSequence(c.received, last));
    results.forEach((r, i) => {
      if (r.gaps === 0 && r.duplicates === 0) return;
      const seen = new Set(clients[i]!.received);
      const missing = Array.from({ length: last }, (_, k) => k + 1).filter((o) => !seen.has(o));
      process.stdout.write(`subscriber ${i} (${i % 2 === 0 ? "sse" : "ws"}) missing ${JSON.stringify(missing)} around ${JSON.stringify(clients[i]!.received.filter((o) => missing.some((m) => Math.abs(o - m) < 3)))} resumes ${JSON.stringify(clients[i]!.resumes)}\n`);
    });
    const figures = {
      subscribers: SUBSCRIBERS,
      restarts: 2,
      events: last,
      reconnects: clients.reduce((n, c) => n + c.reconnects, 0),
      gaps: results.reduce((n, r) => n + r.gaps, 0),
      duplicated: results.reduce((n, r) => n + r.duplicates, 0),
      longestOutageMs,
    };
    process.stdout.write(`chaos/gateway-restart ${JSON.stringify(figures)}\n`);
    expect(figures.reconnects).toBeGreaterThanOrEqual(SUBSCRIBERS * 2);
    expect(figures.gaps).toBe(0);
    expect(figures.duplicated).toBe(0);
  });
});
