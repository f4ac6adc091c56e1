// Scripts run in worker threads (WorkerSandbox): a script computing does not stall the host's
// thread or the other scripts; host functions answer across threads as in the in-thread
// sandbox; a worker that hangs past the deadline or dies is replaced and the pool keeps serving.
import { afterEach, describe, expect, it } from "vitest";
import {
  DEFAULT_SANDBOX_LIMITS,
  type HostCallHandler,
  QuickJsSandbox,
  type SandboxOutcome,
  type ScriptSandbox,
  WorkerSandbox,
  type WorkerSandboxOptions,
} from "../src/sandbox/index.ts";

const opened: ScriptSandbox[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});
async function pool(workers: number, extra: Omit<WorkerSandboxOptions, "workers"> = {}): Promise<WorkerSandbox> {
  const sandbox = await WorkerSandbox.create(DEFAULT_SANDBOX_LIMITS, { workers, ...extra });
  opened.push(sandbox);
  return sandbox;
}

/** A script body in the sandbox's calling convention (what compileScript emits). */
const script = (body: string) => `__finish((async (itx) => {\n${body}\n})(itx));`;
const busyFor = (ms: number, result: string) => script(`const end = Date.now() + ${ms}; while (Date.now() < end) {} return ${JSON.stringify(result)};`);
const noHost: HostCallHandler = async () => undefined;
const run = (sandbox: ScriptSandbox, javascript: string, onHostCall: HostCallHandler = noHost, deadlineMs = 10_000) =>
  sandbox.run({ javascript, agentPath: "/agents/t", deadlineAtMs: Date.now() + deadlineMs, onHostCall });

/** Runs `work` while sampling this thread's timers every 10 ms; returns the longest gap seen. */
async function longestTimerGap<T>(work: () => Promise<T>): Promise<{ value: T; gapMs: number }> {
  let last = performance.now();
  let gapMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    gapMs = Math.max(gapMs, now - last);
    last = now;
  }, 10);
  try {
    const value = await work();
    return { value, gapMs: Math.max(gapMs, performance.now() - last) };
  } finally {
    clearInterval(ticker);
  }
}

describe("WorkerSandbox", () => {
  it("given a script computing for a second, then the host's thread keeps ticking and another script finishes first", { timeout: 30_000 }, async () => {
    const sandbox = await pool(2);
    const order: string[] = [];
    const { value, gapMs } = await longestTimerGap(() =>
      Promise.all([
        run(sandbox, busyFor(1_000, "slow")).then((o) => (order.push("slow"), o)),
        run(sandbox, script('return "quick";')).then((o) => (order.push("quick"), o)),
      ]),
    );
    expect(value.map((o) => o.kind === "returned" && o.value)).toEqual(["slow", "quick"]);
    expect(order).toEqual(["quick", "slow"]);
    // Well under the script's second even on a loaded machine; in-thread the gap is the whole second.
    expect(gapMs).toBeLessThan(500);

    // The measurement can see a stall: the same script in this thread stops the timers.
    const inThread = await QuickJsSandbox.create(DEFAULT_SANDBOX_LIMITS);
    const stalled = await longestTimerGap(() => run(inThread, busyFor(1_000, "slow")));
    expect(stalled.gapMs).toBeGreaterThan(900);
  });

  it("answers host functions across threads: JSON values in, errors with their name and message", { timeout: 30_000 }, async () => {
    const sandbox = await pool(1);
    const calls: [string, unknown[]][] = [];
    const onHostCall: HostCallHandler = async (op, args) => {
      calls.push([op, args]);
      if (op === "kv.get") return { value: args[0], at: new Date(0) };
      throw Object.assign(new Error("no such file: a.txt"), { name: "NotFoundError" });
    };
    const outcome = await run(
      sandbox,
      script(`
        const got = await itx.kv.get("k");
        try { await itx.files.get("a.txt").text(); } catch (e) { return { got, error: e.name + ": " + e.message }; }
        return "unreachable";`),
      onHostCall,
    );
    expect(outcome).toMatchObject({ kind: "returned", value: { got: { value: "k", at: "1970-01-01T00:00:00.000Z" }, error: "NotFoundError: no such file: a.txt" } });
    expect(calls).toEqual([
      ["kv.get", ["k"]],
      ["files.text", ["a.txt"]],
    ]);
  });

  it("stops a script that awaits what nothing will settle at once, in a worker and in this thread, but never while a host call is unanswered", { timeout: 30_000 }, async () => {
    const inThread = await QuickJsSandbox.create();
    opened.push(inThread);
    const slowHost: HostCallHandler = async () => new Promise((resolve) => setTimeout(() => resolve("late"), 1_500));
    for (const sandbox of [await pool(1), inThread]) {
      const started = Date.now();
      const stuck = await run(sandbox, script("await new Promise(() => {}); return 1;"), noHost, 20_000);
      expect(stuck).toMatchObject({ kind: "threw", error: expect.stringContaining("the script awaits something nothing will ever settle") });
      expect(Date.now() - started).toBeLessThan(5_000);
      // A slow answer is awaited, and what the script awaits after it is judged again
      const slow = await run(sandbox, script('const got = await itx.kv.get("k"); return got;'), slowHost, 20_000);
      expect(slow).toMatchObject({ kind: "returned", value: "late" });
      const after = await run(sandbox, script('await itx.kv.get("k"); await new Promise(() => {}); return 1;'), slowHost, 20_000);
      expect(after).toMatchObject({ kind: "threw", error: expect.stringContaining("nothing will ever settle") });
      // A promise the script settles itself, through jobs, is not stuck
      const chained = await run(sandbox, script("let resolve; const p = new Promise((r) => { resolve = r; }); Promise.resolve().then(() => Promise.resolve()).then(() => resolve(7)); return await p;"));
      expect(chained).toMatchObject({ kind: "returned", value: 7 });
    }
  });

  it("queues scripts beyond its workers and runs each in a fresh sandbox", { timeout: 30_000 }, async () => {
    const sandbox = await pool(1);
    const outcomes = await Promise.all(
      [1, 2, 3].map((n) => run(sandbox, script(`globalThis.seen = (globalThis.seen ?? 0) + ${n}; return globalThis.seen;`))),
    );
    expect(outcomes.map((o) => o.kind === "returned" && o.value)).toEqual([1, 2, 3]);
  });

  it("ends a script whose worker never reports at its deadline, replaces the worker and keeps serving", { timeout: 30_000 }, async () => {
    const replaced: string[] = [];
    const sandbox = await pool(1, { entry: new URL("./fixtures/stuck-worker.mjs", import.meta.url), hardStopGraceMs: 100, onWorkerReplaced: (reason) => replaced.push(reason) });
    const started = performance.now();
    const stuck = await run(sandbox, "loop", noHost, 300);
    expect(stuck.kind).toBe("deadline");
    expect(performance.now() - started).toBeGreaterThanOrEqual(350);
    expect(sandbox.workersReplaced).toBe(1);
    const again = await run(sandbox, "loop", noHost, 100);
    expect(again.kind).toBe("deadline");
    expect(sandbox.workersReplaced).toBe(2);
    expect(replaced).toEqual(["deadline", "deadline"]);
  });

  it("fails a script whose worker dies, naming why, and replaces the worker", { timeout: 30_000 }, async () => {
    const replaced: [string, string][] = [];
    const sandbox = await pool(1, {
      entry: new URL("./fixtures/stuck-worker.mjs", import.meta.url),
      hardStopGraceMs: 100,
      onWorkerReplaced: (reason, detail) => replaced.push([reason, detail]),
    });
    const died: SandboxOutcome = await run(sandbox, "exit");
    expect(died).toMatchObject({ kind: "threw", error: "the sandbox worker exited with code 3" });
    expect(sandbox.workersReplaced).toBe(1);
    expect(replaced).toEqual([["died", "the sandbox worker exited with code 3"]]);
    expect((await run(sandbox, "loop", noHost, 100)).kind).toBe("deadline");
  });

  it("reports a thrown value whose getters never return as unreadable within a second, in a worker and in this thread, and serves the next script", { timeout: 30_000 }, async () => {
    // Reading what a script threw runs its getters: one looping for ever held the worker for the
    // whole 10 s slice and was then reported as "[object Object]".
    const throwers = [
      script("throw { get message() { for (;;) {} } };"),
      script("throw { toJSON() { for (;;) {} } };"),
      script("await null; throw { name: 'X', get message() { for (;;) {} } };"),
    ];
    const inThread = await QuickJsSandbox.create(DEFAULT_SANDBOX_LIMITS);
    const workers = await pool(1);
    for (const sandbox of [workers, inThread]) {
      for (const javascript of throwers) {
        const started = Date.now();
        const outcome = await run(sandbox, javascript);
        expect(outcome).toMatchObject({ kind: "threw", error: expect.stringContaining("threw a value that could not be read in 1000 ms") });
        expect(Date.now() - started).toBeLessThan(5_000);
      }
      expect(await run(sandbox, script("try { throw new TypeError('plain'); } finally {}"))).toMatchObject({ kind: "threw", error: "TypeError: plain" });
      // With less than the read's second left, the deadline is what stops it, and it says so
      expect(await run(sandbox, throwers[0] as string, noHost, 600)).toMatchObject({ kind: "deadline" });
      expect(await run(sandbox, script("return 2;"))).toMatchObject({ kind: "returned", value: 2 });
    }
  });

  it("refuses work once closed, and rejects a pool without workers", async () => {
    const sandbox = await pool(1);
    await sandbox.close();
    expect(await run(sandbox, script("return 1;"))).toMatchObject({ kind: "threw", error: "the script sandbox is closed" });
    await expect(WorkerSandbox.create(DEFAULT_SANDBOX_LIMITS, { workers: 0 })).rejects.toThrow("workers must be an integer ≥ 1, got 0");
  });
});
