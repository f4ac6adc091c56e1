// Capability host benchmark (issue #5): the round trip of a trivial script, requested →
// settled, measured by the store's own createdAt stamps (what the renderer reports to the
// model), split into typecheck, sandbox start and run (the host's own phase timings). Also the
// warm checker alone and the sandbox start alone, without NATS. The host runs in-process on a
// harness-started nats-server with the JetStream event store; scripts go through the real
// work queue. The round trips run twice in the same run: with the checker in its worker
// threads (the host's default) and with the in-thread checker the host used before (issue #12:
// goal ≤ 1.2× of in-thread, p50 ≤ 15 ms).
//
// Run: pnpm exec tsx bench/host/host.bench.ts [--scripts 200]

import { availableParallelism, cpus, loadavg, totalmem } from "node:os";
import { execFileSync } from "node:child_process";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createLogger, ensureWorkStreams, publishWork } from "@agentrt/service-kit";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { natsServerBinary, startNatsServer } from "@agentrt/testing";
import { CapabilityHost, compileScript, QuickJsSandbox, ScriptChecker, WorkerChecker, buildScriptSource, loadItxDeclarations } from "@agentrt/capability-host";

const argIndex = process.argv.indexOf("--scripts");
const SCRIPTS = argIndex > 0 ? Number(process.argv[argIndex + 1]) : 200;

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}
const fmt = (n: number) => n.toFixed(2);
const row = (name: string, v: number[]) => `| ${name} | ${v.length} | ${fmt(pct(v, 50))} | ${fmt(pct(v, 99))} |`;

const parts = (code: string) => ({ preamble: "", resultsPreamble: "const results = [] as const;", code, wrapped: `async (itx) => {\n${code}\n}` });

// 1. The warm checker alone.
const checker = new ScriptChecker(loadItxDeclarations());
checker.check(parts("return 0;"), 60_000);
const warmChecks: number[] = [];
for (let i = 0; i < 500; i++) warmChecks.push(checker.check(parts(`return ${i};`), 60_000).durationMs);

// 2. The sandbox alone (fresh runtime + context + itx bootstrap per script).
const sandbox = await QuickJsSandbox.create();
const sandboxStart: number[] = [];
const sandboxRun: number[] = [];
for (let i = 0; i < 500; i++) {
  const js = compileScript(buildScriptSource(parts(`return ${i};`)));
  const out = await sandbox.run({ javascript: js, agentPath: "/agents/bench", deadlineAtMs: Date.now() + 5_000, onHostCall: async () => undefined });
  sandboxStart.push(out.startMs);
  sandboxRun.push(out.runMs);
}

// 3. Round trips through NATS, once per checker placement (fresh host, same server).
const server = await startNatsServer();
const nc = await connect({ servers: server.url });
const store = await JetStreamEventStore.open(nc, { partitionCount: 8 });
await ensureWorkStreams(await jetstreamManager(nc));
const js = jetstream(nc);

interface RoundTrips {
  readonly roundTrips: number[];
  readonly observed: number[];
  readonly phases: { typecheck: number[]; "sandbox-start": number[]; run: number[] };
}

async function roundTrips(checkerThread: "worker" | "in-thread"): Promise<RoundTrips> {
  const phases = { typecheck: [] as number[], "sandbox-start": [] as number[], run: [] as number[] };
  const host = await CapabilityHost.start({
    nc,
    store,
    logger: createLogger("capability-host-bench", "warn"),
    concurrency: 1,
    checkerThread,
    onTiming: (phase, ms) => phases[phase].push(ms),
  });
  if (host.checker instanceof WorkerChecker) await host.checker.whenWarm();
  await host.consume();
  const result: RoundTrips = { roundTrips: [], observed: [], phases };
  for (let i = 0; i < SCRIPTS + 20; i++) {
    const streamPath = `/agents/bench/host-${checkerThread}-${i}`;
    const executionId = `bench:${i}`;
    await store.append(streamPath, [{ type: "agent/created", payload: {} }]);
    const t0 = performance.now();
    const appended = await store.append(streamPath, [
      { type: "capability-host/script-run-requested", payload: { code: "return 1;", executionId, expiresAt: new Date(Date.now() + 600_000).toISOString() } },
    ]);
    const requested = appended.events[0]!;
    await publishWork(js, "script", store.partitionOf(streamPath), { streamPath, requestedOffset: requested.offset, executionId });
    const sub = store.subscribe(streamPath, { fromOffset: requested.offset + 1 });
    for await (const event of sub) {
      if (event.type !== "capability-host/script-run-settled") continue;
      if (i >= 20) {
        result.roundTrips.push(Date.parse(event.createdAt) - Date.parse(requested.createdAt));
        result.observed.push(performance.now() - t0);
      }
      break;
    }
    await sub.close();
  }
  for (const k of Object.keys(phases) as (keyof typeof phases)[]) phases[k] = phases[k].slice(20);
  await host.stop();
  return result;
}

// In-thread first, then the worker checker (the order of the two halves is printed).
const inThread = await roundTrips("in-thread");
const inWorker = await roundTrips("worker");
await store.close();
await nc.close();
await server.stop();

const natsVersion = (() => {
  try {
    return execFileSync(natsServerBinary() ?? "nats-server", ["--version"]).toString().trim();
  } catch {
    return "unknown";
  }
})();
console.log(`Command: \`pnpm exec tsx bench/host/host.bench.ts --scripts ${SCRIPTS}\` — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.`);
console.log(`Machine: nproc ${availableParallelism()}, ${cpus()[0]?.model ?? "?"}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}, ${natsVersion}. Load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(", ")}.`);
console.log("");
console.log("| measure (ms) | n | p50 | p99 |");
console.log("|---|---:|---:|---:|");
for (const [name, r] of [["checker in worker threads", inWorker], ["in-thread checker (before)", inThread]] as const) {
  console.log(row(`${name}: round trip requested → settled (store createdAt)`, r.roundTrips));
  console.log(row(`${name}: round trip as the client sees it (append → settled delivered)`, r.observed));
  console.log(row(`${name}: host phase typecheck`, r.phases.typecheck));
  console.log(row(`${name}: host phase sandbox start`, r.phases["sandbox-start"]));
  console.log(row(`${name}: host phase run`, r.phases.run));
}
console.log(row("warm checker alone (500 checks)", warmChecks));
console.log(row("sandbox start alone (500)", sandboxStart));
console.log(row("sandbox run alone (500)", sandboxRun));
console.log("");
const ratio = (p: number) => pct(inWorker.roundTrips, p) / pct(inThread.roundTrips, p);
console.log(`Worker / in-thread round trip (store createdAt): p50 ${ratio(50).toFixed(2)}×, p99 ${ratio(99).toFixed(2)}× (in-thread ran first).`);
process.exit(0);
