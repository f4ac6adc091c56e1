// Load: 1 000 agents each taking 5 turns against the fake model, every service a real
// process on one nats-server. Reports turns/s, turn overhead p50/p99 (the model received the
// request − the user message was committed; the debounce is 0) and memory per agent (reducer
// and driver RSS growth / agents). Baseline in the same run: the `openai` client calling the
// same fake model directly with the same concurrency, i.e. what a turn costs with no runtime.
//
//   pnpm exec tsx bench/load/load.bench.ts [--agents 1000] [--turns 5] [--concurrency 100]

import os from "node:os";
import OpenAI from "openai";
import type { AgentEvent } from "@agentrt/contract";
import { startSystem } from "../../test/support/system.ts";
import { numberArg, percentile, pool, rssKiB } from "../support/run.ts";
import { lastUserContent } from "../../test/support/turns.ts";

const AGENTS = numberArg("agents", 1000);
const TURNS = numberArg("turns", 5);
const CONCURRENCY = numberArg("concurrency", 100);

const rssMb = (pid: number | undefined) => rssKiB(pid) / 1024;

const system = await startSystem({
  reducers: 1,
  drivers: 2,
  model: { defaultReply: (request) => ({ text: `ok: ${lastUserContent(request.body)}`, tokensPerSecond: 2000 }) },
  env: { LOG_LEVEL: "error", LLM_CONCURRENCY: "128" },
});
try {
  // Baseline: the bare openai client against the same fake model, same concurrency.
  const client = new OpenAI({ baseURL: system.model.url, apiKey: "test" });
  const baselineLatency: number[] = [];
  const baselineCalls = Math.min(AGENTS * TURNS, 2000);
  const baselineStart = performance.now();
  await pool(Array.from({ length: baselineCalls }, (_, i) => i), CONCURRENCY, async (i) => {
    const t0 = performance.now();
    const stream = await client.chat.completions.create({ model: "m", stream: true, messages: [{ role: "user", content: `baseline ${i}` }] });
    for await (const _chunk of stream) {
      // drain
    }
    baselineLatency.push(performance.now() - t0);
  });
  const baselineSeconds = (performance.now() - baselineStart) / 1000;
  const modelRequestsBefore = system.model.requests.length;

  // Follow every committed batch to see replies without polling a thousand streams.
  const replies = new Map<string, () => void>();
  const userCommittedAt = new Map<string, number>();
  const feed = system.store.feed({});
  void (async () => {
    for await (const batch of feed) {
      for (const e of batch.events as AgentEvent[]) {
        if (e.type === "agents/context-added" && e.payload.role === "assistant") {
          const key = e.payload.content.replace(/^ok: /, "");
          replies.get(key)?.();
        }
      }
    }
  })();

  const reducer = system.processes.byService("agent-reducer")[0]!;
  const drivers = system.processes.byService("llm-driver");
  const rssBefore = { reducer: rssMb(reducer.pid), drivers: drivers.reduce((n, d) => n + rssMb(d.pid), 0) };
  const paths = Array.from({ length: AGENTS }, (_, i) => `/agents/load/a${i}`);
  await pool(paths, 50, async (path) => {
    await system.store.append(path, [
      { type: "agent/created", payload: {} },
      { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 0 } } },
    ]);
  });

  const turnLatency: number[] = [];
  const start = performance.now();
  await pool(paths, CONCURRENCY, async (path) => {
    for (let turn = 1; turn <= TURNS; turn += 1) {
      const content = `${path} turn ${turn}`;
      const answered = new Promise<void>((resolve) => replies.set(content, resolve));
      const t0 = performance.now();
      const sent = await system.store.append(path, [
        { type: "agents/context-added", payload: { role: "user", content, actor: { type: "user", origin: "web" } } },
      ]);
      userCommittedAt.set(content, Date.parse(sent.events[0]!.createdAt));
      await answered;
      replies.delete(content);
      turnLatency.push(performance.now() - t0);
    }
  });
  const seconds = (performance.now() - start) / 1000;
  await feed.close();
  const rssAfter = { reducer: rssMb(reducer.pid), drivers: drivers.reduce((n, d) => n + rssMb(d.pid), 0) };

  const overhead = system.model.requests.slice(modelRequestsBefore).flatMap((r) => {
    const committed = userCommittedAt.get(lastUserContent(r.body));
    return committed === undefined ? [] : [r.receivedAtMs - committed];
  });
  const turns = AGENTS * TURNS;
  const lines = [
    `Command: \`pnpm exec tsx bench/load/load.bench.ts --agents ${AGENTS} --turns ${TURNS} --concurrency ${CONCURRENCY}\` — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.`,
    `Machine: nproc ${os.cpus().length}, ${os.cpus()[0]?.model.trim()}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}; one reducer, two drivers, one nats-server (R1), the fake model; load average at the end ${os.loadavg().map((l) => l.toFixed(1)).join(", ")}.`,
    "",
    "| measure | value |",
    "|---|---:|",
    `| agents × turns | ${AGENTS} × ${TURNS} = ${turns} |`,
    `| turns/s (system) | ${(turns / seconds).toFixed(1)} |`,
    `| model calls/s (baseline: bare \`openai\` client, same concurrency) | ${(baselineCalls / baselineSeconds).toFixed(1)} |`,
    `| system turns/s ÷ baseline calls/s | ${(turns / seconds / (baselineCalls / baselineSeconds)).toFixed(2)}× |`,
    `| turn latency p50 / p99 (append → assistant item seen), ms | ${percentile(turnLatency, 50).toFixed(1)} / ${percentile(turnLatency, 99).toFixed(1)} |`,
    `| baseline call latency p50 / p99, ms | ${percentile(baselineLatency, 50).toFixed(1)} / ${percentile(baselineLatency, 99).toFixed(1)} |`,
    `| turn overhead p50 / p99 (model received − user committed), ms | ${percentile(overhead, 50).toFixed(1)} / ${percentile(overhead, 99).toFixed(1)} |`,
    `| reducer RSS growth per agent, KiB | ${(((rssAfter.reducer - rssBefore.reducer) * 1024) / AGENTS).toFixed(1)} |`,
    `| drivers' RSS growth per agent, KiB | ${(((rssAfter.drivers - rssBefore.drivers) * 1024) / AGENTS).toFixed(1)} |`,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  await system.stop();
}
