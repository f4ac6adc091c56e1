// The delivery count a work handler is given never goes backwards for an item this worker has
// seen: nats-server 2.9 re-sends an item whose delayed redelivery found no pull waiting with a
// delivery count of 1 again (fixed upstream by nats-io/nats-server#5305 and #5338).

import { describe, expect, it } from "vitest";
import { DeliveryAttempts } from "../src/work-queue.ts";

describe("DeliveryAttempts", () => {
  it("given the server's counts 1, 2, 1 for one item, gives the handler 1, 2, 3", () => {
    const attempts = new DeliveryAttempts();
    expect([attempts.delivered(7, 1), attempts.delivered(7, 2), attempts.delivered(7, 1)]).toEqual([1, 2, 3]);
  });

  it("takes the server's count when it is ahead (another worker had the item meanwhile)", () => {
    const attempts = new DeliveryAttempts();
    attempts.delivered(7, 1);
    expect(attempts.delivered(7, 5)).toBe(5);
  });

  it("forgets an item once it is done, and keeps items apart", () => {
    const attempts = new DeliveryAttempts();
    attempts.delivered(7, 1);
    attempts.delivered(8, 1);
    attempts.done(7);
    expect(attempts.delivered(7, 1)).toBe(1);
    expect(attempts.delivered(8, 1)).toBe(2);
  });

  it("remembers at most 10 000 items, forgetting the oldest first", () => {
    const attempts = new DeliveryAttempts();
    for (let seq = 1; seq <= 10_001; seq += 1) attempts.delivered(seq, 1);
    expect(attempts.delivered(1, 1)).toBe(1);
    expect(attempts.delivered(10_001, 1)).toBe(2);
  });
});
