// Given /proc stat lines and checks past their budget's wall time, when read and judged, then
// a thread's CPU time is user + system ticks (counted after the command, whatever it holds),
// and a check goes on only while it has used less CPU than its budget and the wall cap allows.

import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { budgetVerdict, CheckBudget, cpuMsOfStat, ownThreadStatPath, threadCpuReader } from "../src/typecheck/thread-cpu.ts";

describe("a thread's CPU time", () => {
  it("given a stat line whose command holds spaces and parentheses, then utime + stime ticks are read after the last parenthesis", () => {
    const line = "4242 (node (worker) x) R 1 4242 4242 0 -1 4194304 100 0 0 0 37 5 0 0 20 0 11 0 123 456 789";
    expect(cpuMsOfStat(line)).toBe(420);
  });

  it("given text that is not a stat line, then nothing is read", () => {
    expect(cpuMsOfStat("")).toBeUndefined();
    expect(cpuMsOfStat("1 (x) R 1 2")).toBeUndefined();
  });

  it.runIf(process.platform === "linux")("given a worker thread that spins, then its own stat file shows the CPU it used, not the parent's", async () => {
    const code = `
      const { parentPort } = require("node:worker_threads");
      const { readlinkSync } = require("node:fs");
      parentPort.postMessage("/proc/" + readlinkSync("/proc/thread-self") + "/stat");
      parentPort.once("message", () => { const end = Date.now() + 400; while (Date.now() < end); parentPort.postMessage("spun"); });`;
    const worker = new Worker(code, { eval: true });
    try {
      const statPath = await new Promise<string>((resolve) => worker.once("message", resolve));
      expect(statPath).not.toBe(ownThreadStatPath());
      const cpu = threadCpuReader(statPath);
      expect(cpu).toBeDefined();
      const before = cpu?.() as number;
      worker.postMessage("spin");
      await new Promise((resolve) => worker.once("message", resolve));
      expect((cpu?.() as number) - before).toBeGreaterThanOrEqual(250);
    } finally {
      await worker.terminate();
    }
  });

  it("given a stat file that cannot be read, then there is no reader (the wall clock decides)", () => {
    expect(threadCpuReader("/proc/0/task/0/stat")).toBeUndefined();
    expect(threadCpuReader(undefined)).toBeUndefined();
  });
});

describe("a check past its budget's wall time", () => {
  it("given less CPU used than its budget, then it goes on for the CPU it has left", () => {
    expect(budgetVerdict({ budgetMs: 2_000, wallMs: 2_000, cpuMs: 300, wallCapMs: 30_000 })).toEqual({ kind: "continue", moreMs: 1_700 });
  });

  it("given its whole budget of CPU used, then it stops", () => {
    expect(budgetVerdict({ budgetMs: 2_000, wallMs: 2_050, cpuMs: 2_000, wallCapMs: 30_000 })).toEqual({ kind: "stop" });
  });

  it("given the wall cap reached, then it stops however little CPU it had", () => {
    expect(budgetVerdict({ budgetMs: 2_000, wallMs: 30_000, cpuMs: 10, wallCapMs: 30_000 })).toEqual({ kind: "stop" });
    expect(budgetVerdict({ budgetMs: 2_000, wallMs: 29_500, cpuMs: 10, wallCapMs: 30_000 })).toEqual({ kind: "continue", moreMs: 500 });
  });

  it("given no CPU reading, then the wall clock decides: it stops", () => {
    expect(budgetVerdict({ budgetMs: 2_000, wallMs: 2_000, cpuMs: undefined, wallCapMs: 30_000 })).toEqual({ kind: "stop" });
  });

  it("given almost all of its CPU used, then it waits at least one clock tick before asking again", () => {
    expect(budgetVerdict({ budgetMs: 2_000, wallMs: 2_000, cpuMs: 1_999, wallCapMs: 30_000 })).toEqual({ kind: "continue", moreMs: 10 });
  });
});

describe("a check's budget", () => {
  it("given a thread's CPU clock, then it counts the CPU used since the check started and judges with it", () => {
    let cpu = 1_000;
    const budget = new CheckBudget(200, () => cpu);
    cpu = 1_050;
    expect(budget.cpuUsedMs()).toBe(50);
    expect(budget.verdict()).toMatchObject({ kind: "continue", moreMs: 150, cpuMs: 50 });
    cpu = 1_200;
    expect(budget.verdict()).toMatchObject({ kind: "stop", cpuMs: 200 });
  });

  it("given no CPU clock, or one that stops answering, then the wall clock decides: stop", () => {
    expect(new CheckBudget(200, undefined).verdict()).toMatchObject({ kind: "stop", cpuMs: undefined });
    let cpu: number | undefined = 0;
    const budget = new CheckBudget(200, () => cpu);
    cpu = undefined;
    expect(budget.verdict()).toMatchObject({ kind: "stop", cpuMs: undefined });
  });
});
