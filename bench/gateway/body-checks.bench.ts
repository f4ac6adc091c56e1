// What the gateway's checks of a request body cost beside parsing it: the bytes are UTF-8
// (`isUtf8`), the depth and the key count are scanned, the value's keys are counted (a key given
// twice in one object is a 400), lone-surrogate escapes are looked for. Ratios to a bare
// `Buffer#toString` + `JSON.parse` of the same bytes, measured in the same run.
//
// Run: pnpm exec tsx bench/gateway/body-checks.bench.ts

import { isUtf8 } from "node:buffer";
import { availableParallelism, cpus, loadavg } from "node:os";
import { jsonDepthExceeds } from "@agentrt/contract";
import { parseJsonBounded } from "../../services/web-gateway/src/http/json-limits.ts";

function timeMs(fn: () => void): number {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** Best and median of `runs` timings, after a warm-up; best is the cost, median the noise. */
function repeat(runs: number, fn: () => void): { best: number; median: number } {
  for (let i = 0; i < 5; i++) fn();
  const samples = Array.from({ length: runs }, () => timeMs(fn)).sort((a, b) => a - b);
  return { best: samples[0] as number, median: samples[Math.floor(runs / 2)] as number };
}

/** An append of `count` user messages of about `chars` characters each, some of them not ASCII. */
function appendBody(count: number, chars: number): Buffer {
  const text = "Plan the migration; check the é and the 😀 too. ".repeat(Math.ceil(chars / 48)).slice(0, chars);
  const events = Array.from({ length: count }, (_, i) => ({ type: "agents/context-added", payload: { role: "user", content: `${i}: ${text}` }, idempotencyKey: `client/${i}` }));
  return Buffer.from(JSON.stringify({ events }));
}

/** A body of many small objects: the most keys per byte (the key count's worst case). */
function manyKeys(count: number): Buffer {
  return Buffer.from(JSON.stringify({ events: [{ type: "agent/configured", payload: { config: Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, { a: i, b: [i] }])) } }] }));
}

const cases: Array<[string, Buffer]> = [
  ["one short message", appendBody(1, 200)],
  ["100 messages of 1 000 characters", appendBody(100, 1_000)],
  ["one message of 900 000 characters", appendBody(1, 900_000)],
  ["20 000 small objects (60 000 keys)", manyKeys(20_000)],
];

console.log(`machine: nproc ${availableParallelism()}, ${cpus()[0]?.model ?? "?"}, Node ${process.version}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}, ${new Date().toISOString()}`);
console.log("");
console.log("| body | bytes | toString + JSON.parse ms (best / median) | + depth scan, surrogate look (the checks before 2026-12-07) ms | + isUtf8, key count (the gateway's read now) ms | before ÷ bare | now ÷ bare | now ÷ before |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
for (const [name, bytes] of cases) {
  const runs = bytes.length > 100_000 ? 60 : 2_000;
  const bare = repeat(runs, () => JSON.parse(bytes.toString("utf8")));
  const before = repeat(runs, () => {
    const text = bytes.toString("utf8");
    if (jsonDepthExceeds(text, 64)) throw new Error("too deep");
    JSON.parse(text);
    if (/\\u[dD][89a-fA-F]/.test(text)) throw new Error("a surrogate escape");
  });
  const checked = repeat(runs, () => {
    if (!isUtf8(bytes)) throw new Error("not UTF-8");
    parseJsonBounded(bytes.toString("utf8"), 64, "The request body");
  });
  const ms = (t: { best: number; median: number }) => `${t.best.toFixed(3)} / ${t.median.toFixed(3)}`;
  const ratio = (a: { best: number }, b: { best: number }) => `${(a.best / b.best).toFixed(2)}×`;
  console.log(`| ${name} | ${bytes.length.toLocaleString("en")} | ${ms(bare)} | ${ms(before)} | ${ms(checked)} | ${ratio(before, bare)} | ${ratio(checked, bare)} | ${ratio(checked, before)} |`);
}
