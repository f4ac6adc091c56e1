// Issue 11, "one read-only key can starve every tenant": with auth on and every service a real
// process, a read-only key floods the gateway with large reads — pages of limit=1000 over
// ~850 kB events and prefix listings of large streams, several in parallel — while
// another tenant appends one event and reads five. Each of the tenant's calls must answer
// within 1 s, and no service may log a lost NATS connection or a lost lease.

import { afterAll, beforeAll, expect, it } from "vitest";
import { type AuthSystem, startAuthSystem } from "./support/auth-system.ts";

const BIG_EVENTS = 48;
const EVENT_CHARS = 850_000;
const LISTED_STREAMS = 6;
const FLOOD_MS = 20_000;
const PARALLEL_PAGE_READERS = 4;
const PARALLEL_LISTERS = 2;

let system: AuthSystem;
const enc = encodeURIComponent;
const bigPath = "/flood/big/stream";
const tenantPath = "/tenant/agents/probe";

const systemNote = (i: number) => ({ type: "agents/context-added", payload: { role: "system", content: `${i}:${"x".repeat(EVENT_CHARS)}` } });

beforeAll(async () => {
  system = await startAuthSystem({
    flooder: { prefix: "/flood", verbs: ["read"] },
    // `operate`: the probe appends a system note, an operator action in the ownership table.
    tenant: { prefix: "/tenant", verbs: ["read", "append", "operate"] },
  });
  // Seeded through the store directly (the flood is about reads); one ~850 kB event per batch.
  for (let i = 0; i < BIG_EVENTS; i++) await system.store.append(bigPath, [systemNote(i)]);
  for (let s = 0; s < LISTED_STREAMS; s++) for (let i = 0; i < 3; i++) await system.store.append(`/flood/listed/s${s}`, [systemNote(i)]);
  const created = await call("tenant", "POST", "/v1/agents", { streamPath: tenantPath });
  expect(created.status).toBe(201);
}, 300_000);

afterAll(async () => {
  await system?.stop();
});

async function call(key: string, method: string, path: string, body?: unknown): Promise<{ status: number; bytes: number; json: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any -- fields asserted below
  let res: Response;
  let text: string;
  try {
    // A call stuck for 30 s counts as failed (status 0) rather than hanging the test.
    res = await fetch(`${system.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${system.keys[key]}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    text = await res.text();
  } catch {
    return { status: 0, bytes: 0, json: undefined };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, bytes: text.length, json };
}

interface FloodStats {
  requests: number;
  bytes: number;
  failures: string[];
}

async function pageReader(until: number, stats: FloodStats): Promise<void> {
  let from = 1;
  while (Date.now() < until) {
    const res = await call("flooder", "GET", `/v1/streams/${enc(bigPath)}/events?fromOffset=${from}&limit=1000`);
    stats.requests++;
    stats.bytes += res.bytes;
    if (res.status !== 200) {
      stats.failures.push(`read ${res.status}`);
      continue;
    }
    from = res.json.events.length === 0 || res.json.nextOffset > res.json.lastOffset ? 1 : res.json.nextOffset;
  }
}

async function lister(until: number, stats: FloodStats): Promise<void> {
  let after: string | undefined;
  while (Date.now() < until) {
    const res = await call("flooder", "GET", `/v1/agents?prefix=${enc("/flood/")}${after === undefined ? "" : `&after=${enc(after)}`}`);
    stats.requests++;
    stats.bytes += res.bytes;
    if (res.status !== 200) stats.failures.push(`list ${res.status}`);
    after = res.json?.next;
  }
}

it("a read-only key's flood of large reads leaves other tenants' calls under 1 s and every service connected", async () => {
  const until = Date.now() + FLOOD_MS;
  const stats: FloodStats = { requests: 0, bytes: 0, failures: [] };
  const flood = Promise.all([
    ...Array.from({ length: PARALLEL_PAGE_READERS }, () => pageReader(until, stats)),
    ...Array.from({ length: PARALLEL_LISTERS }, () => lister(until, stats)),
  ]);
  const appendMs: number[] = [];
  const readMs: number[] = [];
  const tenantFailures: string[] = [];
  let n = 0;
  while (Date.now() < until) {
    const appendStart = Date.now();
    const appended = await call("tenant", "POST", `/v1/streams/${enc(tenantPath)}/events`, {
      events: [{ type: "agents/context-added", payload: { role: "system", content: `probe ${++n}` } }],
    });
    appendMs.push(Date.now() - appendStart);
    if (appended.status !== 200) tenantFailures.push(`append ${appended.status}`);
    const readStart = Date.now();
    const read = await call("tenant", "GET", `/v1/streams/${enc(tenantPath)}/events?fromOffset=1&limit=5`);
    readMs.push(Date.now() - readStart);
    if (read.status !== 200 || read.json.events.length !== 5) tenantFailures.push(`read ${read.status}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await flood;
  const worst = (xs: number[]) => Math.max(...xs);
  const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const logs = system.processes.all.map((p) => ({ name: p.name, running: p.running, exits: p.exitCount, logs: p.logs() }));
  const lost = logs.flatMap((p) =>
    p.logs
      .split("\n")
      .filter((line) => /"msg":"(nats connection status|lease lost|lease round failed)"/.test(line))
      .map((line) => `${p.name}: ${line.slice(0, 300)}`),
  );
  process.stdout.write(
    `large-read flood: ${stats.requests} flood requests, ${(stats.bytes / 1e6).toFixed(0)} MB served, ${stats.failures.length} flood failures; ` +
      `tenant append p50 ${p50(appendMs)} ms max ${worst(appendMs)} ms, 5-event read p50 ${p50(readMs)} ms max ${worst(readMs)} ms over ${appendMs.length} probes ` +
      `(${tenantFailures.length} failed); ${lost.length} lost-connection/lease log lines\n`,
  );
  expect(lost).toEqual([]);
  for (const p of logs) expect({ name: p.name, running: p.running, exits: p.exits }).toEqual({ name: p.name, running: true, exits: 0 });
  expect(tenantFailures).toEqual([]);
  expect(stats.failures).toEqual([]);
  expect(stats.requests).toBeGreaterThan(20);
  expect(worst(appendMs)).toBeLessThan(1000);
  expect(worst(readMs)).toBeLessThan(1000);
}, 180_000);
