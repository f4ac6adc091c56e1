// Given the checker pool in worker threads, when a script's types hold a checker past its
// budget, then the check answers `timed-out` at the budget (not when TypeScript gets round to
// its cancellation token), the worker is terminated once it has used its budget of CPU and a
// warm replacement serves the next check, and the other worker answers other checks meanwhile.
// A check the machine kept off the CPU is answered `timed-out` at the budget too, but its warm
// worker is kept. A worker that dies answers its check `checker-lost`, naming why.

import { afterEach, describe, expect, it, vi } from "vitest";
import { loadItxDeclarations, type ScriptSourceParts, WorkerChecker } from "../src/index.ts";
import { STARVED_WALL_FACTOR } from "../src/typecheck/thread-cpu.ts";
import { typeBomb } from "./fixtures/type-bomb.ts";

const parts = (code: string): ScriptSourceParts => ({ preamble: "", resultsPreamble: "const results = [] as const;", code, wrapped: `async (itx) => {\n${code}\n}` });

let pool: WorkerChecker | undefined;
afterEach(async () => pool?.close());

async function warmPool(workers: number, entry?: URL, tenantOf?: (agent: string) => string): Promise<{ pool: WorkerChecker; replaced: string[] }> {
  const replaced: string[] = [];
  const warm: number[] = [];
  const created = new WorkerChecker({
    workers,
    itxDeclarations: loadItxDeclarations(),
    ...(entry === undefined ? {} : { entry }),
    ...(tenantOf === undefined ? {} : { tenantOf }),
    onWarm: (ms) => warm.push(ms),
    onWorkerReplaced: (reason) => replaced.push(reason),
  });
  pool = created;
  const start = Date.now();
  while (warm.length < workers && Date.now() - start < 60_000) await new Promise((r) => setTimeout(r, 20));
  expect(warm).toHaveLength(workers);
  return { pool: created, replaced };
}

describe("typecheck in worker threads", () => {
  it("serves a script's own check before every waiting docs check, whenever it was queued", async () => {
    const { pool } = await warmPool(1);
    const order: string[] = [];
    const track = (name: string, promise: Promise<unknown>) => promise.then(() => order.push(name));
    // The worker is busy with a docs check; two more docs checks wait, then a script's own.
    const busy = track("docs-1", pool.check(parts("const a: number = 1; return a;"), 30_000, { lane: "docs" }));
    const docs2 = track("docs-2", pool.check(parts("return 2;"), 30_000, { lane: "docs" }));
    const docs3 = track("docs-3", pool.check(parts("return 3;"), 30_000, { lane: "docs" }));
    const own = track("script", pool.check(parts("return 4;"), 30_000, { compile: true }));
    await Promise.all([busy, docs2, docs3, own]);
    expect(order).toEqual(["docs-1", "script", "docs-2", "docs-3"]);
  }, 120_000);

  it("lets agents take turns: another agent's check waiting behind one agent's goes next, whatever order they queued in", async () => {
    const { pool } = await warmPool(1);
    const order: string[] = [];
    const track = (name: string, agent: string, code: string) => pool.check(parts(code), 30_000, { compile: true, agent }).then(() => order.push(name));
    // Agent a's first check runs; its two more wait, then agent b's one.
    await Promise.all([
      track("a-1", "/agents/a", "const a: number = 1; return a;"),
      track("a-2", "/agents/a", "return 2;"),
      track("a-3", "/agents/a", "return 3;"),
      track("b-1", "/agents/b", "return 4;"),
    ]);
    expect(order).toEqual(["a-1", "b-1", "a-2", "a-3"]);
  }, 120_000);

  it("lets tenants take turns before their agents: another tenant's one check goes before a tenant's many agents' checks", async () => {
    const { pool } = await warmPool(1, undefined, (agent) => agent.split("/").slice(0, 3).join("/"));
    const order: string[] = [];
    const track = (name: string, agent: string, code: string) => pool.check(parts(code), 30_000, { compile: true, agent }).then(() => order.push(name));
    // Tenant /t/a's first check runs; three more of its agents' wait, then tenant /t/b's one.
    await Promise.all([
      track("a1", "/t/a/1", "const a: number = 1; return a;"),
      track("a2", "/t/a/2", "return 2;"),
      track("a3", "/t/a/3", "return 3;"),
      track("a4", "/t/a/4", "return 4;"),
      track("b1", "/t/b/1", "return 5;"),
    ]);
    // Agents taking turns alone had served b1 last: each of /t/a's agents was never served either
    expect(order).toEqual(["a1", "b1", "a2", "a3", "a4"]);
  }, 120_000);

  it("holds an agent whose check timed out behind other agents' checks for a while", async () => {
    const { pool } = await warmPool(1);
    const order: string[] = [];
    const track = (name: string, agent: string, code: string, budgetMs = 30_000) => pool.check(parts(code), budgetMs, { compile: true, agent }).then(() => order.push(name));
    // Agent a's bomb takes the worker and times out; b's check waits for the replacement.
    const bomb = track("a-bomb", "/agents/a", typeBomb(), 1_000);
    const b1 = track("b-1", "/agents/b", "return 1;");
    await bomb;
    // Then a's next check queues before b's next: b, served after a, would otherwise wait its turn.
    const a2 = track("a-2", "/agents/a", "return 2;");
    const b2 = track("b-2", "/agents/b", "return 3;");
    await Promise.all([b1, a2, b2]);
    expect(order).toEqual(["a-bomb", "b-1", "b-2", "a-2"]);
  }, 120_000);

  it("holds an agent whose check killed its worker behind other agents' checks too", async () => {
    const { pool } = await warmPool(1, new URL("./fixtures/picky-checker-worker.mjs", import.meta.url));
    const order: string[] = [];
    const track = (name: string, agent: string, code: string) => pool.check(parts(code), 30_000, { agent }).then((r) => order.push(`${name}:${r.kind}`));
    // Agent a's check kills its worker; then b's runs, and a's and b's next wait behind it.
    await track("a-1", "/agents/a", "die");
    const b1 = track("b-1", "/agents/b", "return 1;");
    const a2 = track("a-2", "/agents/a", "return 2;");
    const b2 = track("b-2", "/agents/b", "return 3;");
    await Promise.all([b1, a2, b2]);
    // a, served longest ago, would go next; held back, it goes after b.
    expect(order).toEqual(["a-1:checker-lost", "b-1:ok", "b-2:ok", "a-2:ok"]);
  }, 60_000);

  it("answers a bomb timed-out at its budget, replaces the worker, and keeps checking on the other worker meanwhile", async () => {
    const { pool, replaced } = await warmPool(2);
    const t0 = performance.now();
    const bomb = pool.check(parts(typeBomb()), 1_000, { compile: true });
    const other = await pool.check(parts("return 2;"), 5_000, { compile: true });
    expect(other.kind).toBe("ok");
    expect(other.compiled).toMatchObject({ ok: true, javascript: expect.stringContaining("return 2;") });
    expect(performance.now() - t0).toBeLessThan(1_000);

    const result = await bomb;
    const elapsed = performance.now() - t0;
    expect(result).toMatchObject({ kind: "timed-out", budgetMs: 1_000 });
    expect(result.compiled).toBeUndefined();
    expect(elapsed).toBeGreaterThanOrEqual(990);
    expect(elapsed).toBeLessThan(1_500);
    // Terminated once it has used its second of CPU (at once on a quiet machine, later on a busy one).
    await vi.waitFor(() => expect(replaced).toEqual(["timed-out"]), { timeout: 1_000 * STARVED_WALL_FACTOR });

    // The replacement warms; both workers serve again.
    const [a, b] = await Promise.all([pool.check(parts("return 3;"), 30_000), pool.check(parts("itx.chat.sendMesage('x');"), 30_000)]);
    expect(a.kind).toBe("ok");
    expect(b).toMatchObject({ kind: "blocked", problems: [expect.stringContaining("Did you mean 'sendMessage'")] });
  }, 120_000);

  it.runIf(process.platform === "linux")("answers a check the machine kept off the CPU timed-out at its budget, and keeps its warm worker for the next", async () => {
    // Each check's thread sleeps 600 ms first (no CPU, as on a starved machine). A worker's
    // environment is copied when it is created.
    process.env.CHECKER_STALL_MS = "600";
    const { pool, replaced } = await warmPool(1, new URL("./fixtures/stalled-checker-worker.mjs", import.meta.url));
    delete process.env.CHECKER_STALL_MS;
    const t0 = performance.now();
    const starved = await pool.check(parts("return 2;"), 200, { compile: true });
    const answeredMs = performance.now() - t0;
    expect(starved).toMatchObject({ kind: "timed-out", budgetMs: 200 });
    expect(answeredMs).toBeGreaterThanOrEqual(190);
    expect(answeredMs).toBeLessThan(550);
    // The worker finishes that check (its answer dropped) and takes the next one warm: nothing
    // was terminated, nothing warms again.
    expect(await pool.check(parts("itx.chat.sendMesage('x');"), 10_000)).toMatchObject({ kind: "blocked" });
    expect(replaced).toEqual([]);
  }, 120_000);

  it("answers a check whose worker dies checker-lost, naming the exit, and starts another worker", async () => {
    const { pool, replaced } = await warmPool(1, new URL("./fixtures/dying-checker-worker.mjs", import.meta.url));
    expect(await pool.check(parts("return 1;"), 5_000)).toMatchObject({ kind: "checker-lost", reason: "the checker exited with code 5" });
    expect(replaced).toEqual(["died"]);
    expect(await pool.check(parts("return 1;"), 5_000)).toMatchObject({ kind: "checker-lost" });
  }, 60_000);

  it("answers a check still waiting for a warm worker at its deadline timed-out, and refuses checks once closed", async () => {
    // A worker's environment is copied when it is created: the gate goes in first.
    process.env.CHECKER_GATE = "/nonexistent/never";
    const cold = new WorkerChecker({ workers: 1, itxDeclarations: loadItxDeclarations(), entry: new URL("./fixtures/gated-checker-worker.mjs", import.meta.url) });
    pool = cold;
    const waited = await cold.check(parts("return 1;"), 2_000, { deadlineAtMs: Date.now() + 300 });
    delete process.env.CHECKER_GATE;
    expect(waited.kind).toBe("timed-out");
    await cold.close();
    expect(await cold.check(parts("return 1;"), 2_000)).toMatchObject({ kind: "checker-lost", reason: "the checker is closed" });
  }, 30_000);
});
