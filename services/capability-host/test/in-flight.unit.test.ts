// A script's itx calls in flight are bounded (itx/in-flight.ts): Promise.all over many calls runs
// them a few at a time, in order, and a failing call gives its turn to the next.
import { describe, expect, it } from "vitest";
import { limitInFlight } from "../src/itx/in-flight.ts";

describe("limitInFlight", () => {
  it("given 50 calls made at once, when each takes a while, then at most max run at a time, all answer, in the order made", async () => {
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const limited = limitInFlight(async (_op, args) => {
      started.push(args[0] as number);
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 2));
      running--;
      return (args[0] as number) * 2;
    }, 8);
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => limited("streams.read", [i])));
    expect(answers).toEqual(Array.from({ length: 50 }, (_, i) => i * 2));
    expect(most).toBe(8);
    expect(started).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });

  it("given calls that fail, when they settle, then each gives its turn to the next and the failure reaches its caller", async () => {
    let running = 0;
    let most = 0;
    const limited = limitInFlight(async (_op, args) => {
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 1));
      running--;
      if ((args[0] as number) % 2 === 0) throw new Error(`no ${args[0] as number}`);
      return args[0];
    }, 2);
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => limited("kv.get", [i])));
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? "rejected" : "fulfilled")));
    expect(most).toBe(2);
    // The slots all came back: a later call starts at once.
    expect(await limited("kv.get", [1])).toBe(1);
  });

  it("given 20 calls made at once, when the script ends while 18 wait, then the 2 running finish, the rest never start and are refused, as are later calls", async () => {
    const started: number[] = [];
    const ended = new AbortController();
    const limited = limitInFlight(
      async (_op, args) => {
        started.push(args[0] as number);
        await new Promise((resolve) => setTimeout(resolve, 5));
        return args[0];
      },
      2,
      ended.signal,
    );
    const calls = Array.from({ length: 20 }, (_, i) => limited("chat.sendMessage", [i]));
    ended.abort();
    const results = await Promise.allSettled(calls);
    expect(started).toEqual([0, 1]);
    expect(results.slice(0, 2)).toEqual([
      { status: "fulfilled", value: 0 },
      { status: "fulfilled", value: 1 },
    ]);
    for (const result of results.slice(2)) {
      expect(result).toMatchObject({ status: "rejected", reason: { message: "itx chat.sendMessage: the script had finished before this call could start; await itx calls before returning." } });
    }
    await expect(limited("kv.get", [99])).rejects.toThrow("itx kv.get: the script had finished before this call could start");
    expect(started).toEqual([0, 1]);
  });

  it("refuses a max that is not a positive integer", () => {
    expect(() => limitInFlight(async () => undefined, 0)).toThrow(RangeError);
  });
});
