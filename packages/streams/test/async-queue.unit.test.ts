// The push-to-pull bridge's hold-back: `below(n, weight)` resolves once the consumer has taken
// enough that at most n items (of at most that weight) wait, or once the queue has ended; never
// while more wait.

import { describe, expect, it } from "vitest";
import { AsyncQueue } from "../src/async-queue.ts";

const settledWithin = async (promise: Promise<unknown>, ms = 20): Promise<boolean> =>
  Promise.race([promise.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe("AsyncQueue.below", () => {
  it("resolves at once when few enough items wait", async () => {
    const queue = new AsyncQueue<number>();
    queue.push(1);
    expect(queue.size).toBe(1);
    expect(await settledWithin(queue.below(1))).toBe(true);
  });

  it("waits until the consumer has taken items down to the limit", async () => {
    // Given three items waiting and a producer holding back until none wait
    const queue = new AsyncQueue<number>();
    for (const n of [1, 2, 3]) queue.push(n);
    const drained = queue.below(0);
    const it = queue[Symbol.asyncIterator]();
    // When the consumer takes two, the producer still waits
    await it.next();
    await it.next();
    expect(queue.size).toBe(1);
    expect(await settledWithin(drained)).toBe(false);
    // And when it takes the third, the producer goes on
    expect((await it.next()).value).toBe(3);
    expect(await settledWithin(drained)).toBe(true);
  });

  it("lets a waiting producer go when the queue ends or its consumer stops", async () => {
    const ended = new AsyncQueue<number>();
    ended.push(1);
    const waitingOnEnded = ended.below(0);
    ended.end();
    expect(await settledWithin(waitingOnEnded)).toBe(true);

    const abandoned = new AsyncQueue<number>();
    abandoned.push(1);
    abandoned.push(2);
    const waitingOnAbandoned = abandoned.below(0);
    for await (const _ of abandoned) break;
    expect(abandoned.closed).toBe(true);
    expect(await settledWithin(waitingOnAbandoned)).toBe(true);
  });
});

describe("AsyncQueue weights", () => {
  it("sums the weight of the items waiting, and holds a producer back until both the count and the weight fit", async () => {
    // Given three items of 5, 3 and 2 bytes waiting
    const queue = new AsyncQueue<string>();
    queue.push("a", 5);
    queue.push("b", 3);
    queue.push("c", 2);
    expect(queue.weight).toBe(10);
    // When a producer waits for at most 2 items of at most 4 bytes
    const room = queue.below(2, 4);
    const it = queue[Symbol.asyncIterator]();
    // Then taking one (2 items, 5 bytes left) is not enough: the weight still does not fit
    await it.next();
    expect(queue.weight).toBe(5);
    expect(await settledWithin(room)).toBe(false);
    // And taking the next is
    await it.next();
    expect(queue.weight).toBe(2);
    expect(await settledWithin(room)).toBe(true);
  });
});
