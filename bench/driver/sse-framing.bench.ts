// What re-framing a model's event stream costs a turn (services/llm-driver/src/sse-framing.ts):
// the framer's pass over a typical reply's bytes, beside the JSON.parse of its events that the
// `openai` client does anyway, in the same run; and what a flood of blank lines costs it.
//
// Run: pnpm exec tsx bench/driver/sse-framing.bench.ts

import { availableParallelism, cpus, loadavg } from "node:os";
import { SseFramer } from "../../services/llm-driver/src/sse-framing.ts";

function perRunMicros(rounds: number, fn: () => void): number {
  for (let i = 0; i < Math.min(2_000, rounds); i++) fn();
  const samples: number[] = [];
  for (let s = 0; s < 7; s++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < rounds; i++) fn();
    samples.push(Number(process.hrtime.bigint() - start) / rounds / 1_000);
  }
  return samples.sort((a, b) => a - b)[0] as number;
}

const chunk = (content: string) => `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

const cases: Array<[string, Buffer[], number]> = [
  ["a 22-token reply, one event per network chunk", Array.from({ length: 22 }, (_, i) => Buffer.from(chunk(`tok${i} `))), 20_000],
  ["a 2 000-token reply in 64 KiB network chunks", splitEvery(Buffer.from(Array.from({ length: 2_000 }, (_, i) => chunk(`tok${i} `)).join("")), 65_536), 200],
  ["1 MiB of blank lines (a flood the client would copy per line)", splitEvery(Buffer.from("\n".repeat(1 << 20)), 65_536), 50],
];

function splitEvery(bytes: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

console.log(`machine: nproc ${availableParallelism()}, ${cpus()[0]?.model ?? "?"}, Node ${process.version}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}, ${new Date().toISOString()}`);
console.log("");
console.log("| stream | bytes | framing µs | JSON.parse of its events µs | framing ÷ parse |");
console.log("|---|---:|---:|---:|---:|");
for (const [name, pieces, rounds] of cases) {
  const bytes = pieces.reduce((n, p) => n + p.length, 0);
  const datas = new TextDecoder()
    .decode(Buffer.concat(pieces))
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => line.slice(6));
  const framing = perRunMicros(rounds, () => {
    const framer = new SseFramer();
    for (const piece of pieces) framer.push(piece);
    framer.end();
  });
  const parsing = datas.length === 0 ? undefined : perRunMicros(rounds, () => datas.forEach((d) => JSON.parse(d)));
  console.log(`| ${name} | ${bytes.toLocaleString("en")} | ${framing.toFixed(1)} | ${parsing === undefined ? "–" : parsing.toFixed(1)} | ${parsing === undefined ? "–" : `${(framing / parsing).toFixed(2)}×`} |`);
}
