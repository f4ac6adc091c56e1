// Live fan-out through the web gateway: one agent stream, 100 SSE (then 100 WebSocket)
// subscribers, against a direct in-process store subscriber in the same run. Reports the
// delivered events/s and each transport's latency from append start to arrival, and the
// latency the gateway adds over the direct subscriber.
//   pnpm exec tsx bench/gateway/fanout.bench.ts [--subscribers 100] [--events 300] [--burst 2000]

import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { connectNats } from "@agentrt/service-kit";
import { liveUrl, natsServerBinary, startNatsServer, testLogger, userMessage, waitFor } from "@agentrt/testing";
import { Authenticator, createHttpGateway, gatewayCore } from "@agentrt/web-gateway";
import { describeMachine } from "../store/machine.ts";
import { percentile } from "../store/measure.ts";
import { gatewayClient, storeClient, type Recorder } from "./clients.ts";

const { values } = parseArgs({
  options: { subscribers: { type: "string", default: "100" }, events: { type: "string", default: "300" }, burst: { type: "string", default: "2000" } },
});
const SUBSCRIBERS = Number(values.subscribers);
const PACED_EVENTS = Number(values.events);
const BURST_EVENTS = Number(values.burst);
const PACE_MS = 10;


interface Row {
  transport: string;
  pacedP50: number;
  pacedP99: number;
  directP50: number;
  directP99: number;
  burstEventsPerSec: number;
  burstDirectEventsPerSec: number;
  burstDeliveredPerSec: number;
}

const nats = await startNatsServer();
const nc = await connectNats({ url: nats.url, name: "fanout-bench" });
const store = await JetStreamEventStore.open(nc);
// The direct baseline gets its own connection, as a separate service would.
const directNc = await connectNats({ url: nats.url, name: "fanout-bench-direct" });
const directStore = await JetStreamEventStore.open(directNc);
const gateway = createHttpGateway({
  store,
  core: gatewayCore(),
  auth: new Authenticator({ keys: [], devMode: true, defaultRateLimit: { perSecond: 1e9, burst: 1e9 }, nowMs: Date.now }),
  log: testLogger("fanout-bench"),
  // Every bench subscriber shares one loopback address, which dev mode's cap counts together.
  maxLiveSubscriptionsPerKey: SUBSCRIBERS + 1,
});
const port = await gateway.listen(0, "127.0.0.1");

async function runTransport(transport: "sse" | "ws"): Promise<Row> {
  const path = `/agents/bench/fanout-${transport}-${Date.now().toString(36)}`;
  await store.append(path, [{ type: "agent/created", payload: {} }]);
  const subs: Recorder[] = [];
  for (let i = 0; i < SUBSCRIBERS; i++) subs.push(await gatewayClient(transport, liveUrl(`http://127.0.0.1:${port}`, transport, path, { fromOffset: 1 })));
  const direct = storeClient(directStore, path);
  const everyone = [...subs, direct];
  await waitFor(() => everyone.every((s) => s.arrivals.has(1)), { timeoutMs: 60_000, what: "every subscriber to see offset 1" });

  // Paced: one event every PACE_MS, latency from append start to arrival.
  const sentAt = new Map<number, number>();
  for (let i = 0; i < PACED_EVENTS; i++) {
    const t0 = performance.now();
    const res = await store.append(path, [userMessage(`message ${i}`)]);
    sentAt.set(res.events[0]!.offset, t0);
    const wait = PACE_MS - (performance.now() - t0);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  const lastPaced = PACED_EVENTS + 1;
  await waitFor(() => everyone.every((s) => s.arrivals.has(lastPaced)), { timeoutMs: 120_000, what: "paced events everywhere" });
  const latencies = (recorders: Recorder[]) =>
    recorders.flatMap((s) => [...sentAt].map(([offset, t0]) => s.arrivals.get(offset)! - t0));
  const gw = latencies(subs);
  const dl = latencies([direct]);

  // Burst: BURST_EVENTS in batches of 10 appended back to back; time until each subscriber has all.
  const burstStart = performance.now();
  for (let i = 0; i < BURST_EVENTS; i += 10) await store.append(path, Array.from({ length: 10 }, (_, j) => userMessage(`message ${i + j}`)));
  const lastBurst = lastPaced + BURST_EVENTS;
  await waitFor(() => everyone.every((s) => s.arrivals.has(lastBurst)), { timeoutMs: 300_000, intervalMs: 20, what: "burst events everywhere" });
  const doneAt = (s: Recorder) => s.arrivals.get(lastBurst)! - burstStart;
  const gwDone = subs.map(doneAt);
  for (const s of everyone) s.close();
  return {
    transport,
    pacedP50: percentile(gw, 50),
    pacedP99: percentile(gw, 99),
    directP50: percentile(dl, 50),
    directP99: percentile(dl, 99),
    burstEventsPerSec: BURST_EVENTS / (percentile(gwDone, 50) / 1000),
    burstDirectEventsPerSec: BURST_EVENTS / (doneAt(direct) / 1000),
    burstDeliveredPerSec: (BURST_EVENTS * SUBSCRIBERS) / (Math.max(...gwDone) / 1000),
  };
}

const rows = [await runTransport("sse"), await runTransport("ws")];
const f = (n: number, d = 1) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const out: string[] = [
  `Command: \`pnpm exec tsx bench/gateway/fanout.bench.ts --subscribers ${SUBSCRIBERS} --events ${PACED_EVENTS} --burst ${BURST_EVENTS}\` — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.`,
  `Machine: ${describeMachine(natsServerBinary())}. Load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(", ")}.`,
  "",
  "| transport | subscribers | paced p50 ms | paced p99 ms | direct p50 ms | direct p99 ms | added p50 ms | burst events/s per subscriber (median) | direct burst events/s | delivered events/s (all subscribers) |",
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map(
    (r) =>
      `| ${r.transport} | ${SUBSCRIBERS} | ${f(r.pacedP50)} | ${f(r.pacedP99)} | ${f(r.directP50)} | ${f(r.directP99)} | ${f(r.pacedP50 - r.directP50)} | ${f(r.burstEventsPerSec, 0)} | ${f(r.burstDirectEventsPerSec, 0)} | ${f(r.burstDeliveredPerSec, 0)} |`,
  ),
];
process.stdout.write(`${out.join("\n")}\n`);

await gateway.close();
await store.close();
await directStore.close();
await nc.drain();
await directNc.drain();
await nats.stop();
