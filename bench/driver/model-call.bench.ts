// The model call's own cost: the real `openai` client streaming a chat turn from the fake model,
// once over Node's global fetch and once over the driver's keep-alive node:http fetch
// (services/llm-driver/src/http-fetch.ts), alternated in rounds in one process.
// "On the wire" = the model has the whole request body − `create()` was called; "turn" = the
// stream ended − `create()` was called. Nothing else runs in the process.
//
// Run: pnpm bench driver/model-call [--calls 300] [--rounds 3]

import OpenAI from "openai";
import { monotonicMs, startFakeModel } from "@agentrt/testing";
import { createHttpFetch } from "../../services/llm-driver/src/http-fetch.ts";
import os from "node:os";
import { numberArg, percentile } from "../support/run.ts";

const CALLS = numberArg("calls", 300);
const ROUNDS = numberArg("rounds", 3);

const now = monotonicMs;

const model = await startFakeModel({ defaultReply: { text: "ok, here is the reply to that.", usage: { inputTokens: 100, outputTokens: 8 } } });
const http = createHttpFetch();
const clients = {
  "global fetch": new OpenAI({ baseURL: model.url, apiKey: "bench", maxRetries: 0 }),
  "node:http (the driver's)": new OpenAI({ baseURL: model.url, apiKey: "bench", maxRetries: 0, fetch: http.fetch }),
};
// A conversation of a realistic size: the body is ~4 KB.
const history = Array.from({ length: 8 }, (_, i) => ({ role: i % 2 === 0 ? ("user" as const) : ("assistant" as const), content: `message ${i} `.repeat(40) }));

async function measure(client: OpenAI): Promise<{ wire: number[]; turn: number[] }> {
  const wire: number[] = [];
  const turn: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const seen = model.requests.length;
    const started = now();
    const stream = await client.chat.completions.create({ model: "m", messages: [...history, { role: "user", content: `turn ${i}` }], stream: true, stream_options: { include_usage: true } });
    for await (const _chunk of stream) {
      // drained
    }
    const ended = now();
    const request = (await model.waitForRequests(seen + 1, 5_000)).at(-1)!;
    wire.push(request.receivedAtMonotonicMs - started);
    turn.push(ended - started);
  }
  return { wire, turn };
}

const results = new Map<string, { wire: number[]; turn: number[] }[]>();
for (const name of Object.keys(clients)) results.set(name, []);
for (let round = 0; round < ROUNDS; round++) {
  const names = Object.keys(clients) as (keyof typeof clients)[];
  for (const name of round % 2 === 0 ? names : [...names].reverse()) {
    await measure(clients[name]); // warm-up: connections, JIT
    results.get(name)!.push(await measure(clients[name]));
  }
}
http.close();
await model.close();

const median = (values: number[]): number => percentile(values, 50);
const fmt = (n: number): string => n.toFixed(2);
const base = results.get("global fetch")!;
console.log(`Command: \`pnpm bench driver/model-call --calls ${CALLS} --rounds ${ROUNDS}\` — ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC.`);
console.log(`Machine: nproc ${os.cpus().length}, ${os.cpus()[0]?.model.trim()}, Node ${process.version}; load average at the end ${os.loadavg().map((l) => l.toFixed(1)).join(", ")}.`);
console.log(`${CALLS} streamed chat calls per round after as many to warm up, ${ROUNDS} rounds alternated; medians of the rounds' percentiles.\n`);
console.log("| client | on the wire p50 ms | p99 ms | turn p50 ms | p99 ms | on the wire p50 ÷ global fetch |");
console.log("|---|---:|---:|---:|---:|---:|");
for (const [name, rounds] of results) {
  const wire50 = median(rounds.map((r) => percentile(r.wire, 50)));
  console.log(
    `| ${name} | ${fmt(wire50)} | ${fmt(median(rounds.map((r) => percentile(r.wire, 99))))} | ${fmt(median(rounds.map((r) => percentile(r.turn, 50))))} | ${fmt(median(rounds.map((r) => percentile(r.turn, 99))))} | ${fmt(wire50 / median(base.map((r) => percentile(r.wire, 50))))}× |`,
  );
}
process.exit(0);
