// A stream or bucket every service creates when missing: a create refused because another
// process's create of it is under way is tried again; any other refusal is the caller's.

import { JetStreamApiError } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { createShared, isCreateRace } from "../src/jetstream/shared-create.ts";

const refusal = (errCode: number, description: string) => new JetStreamApiError({ code: 400, err_code: errCode, description });

describe("createShared", () => {
  it("tries again while the server answers as it does to a racing create, and returns what the create returned", async () => {
    // Given a create refused the three ways nats-server 2.9 refuses one racing another, then let through
    const answers = [refusal(10065, "subjects overlap with an existing stream"), refusal(10058, "stream name already in use"), refusal(10049, "error creating store for stream")];
    let calls = 0;
    const create = async () => {
      calls += 1;
      const next = answers.shift();
      if (next !== undefined) throw next;
      return "bucket";
    };
    // When it is created as shared
    const created = await createShared(create);
    // Then the fourth try's result is the answer
    expect(created).toBe("bucket");
    expect(calls).toBe(4);
  });

  it("throws any other refusal at once", async () => {
    // Given a create refused for its configuration (not a race)
    let calls = 0;
    const refused = refusal(10074, "replicas > 1 not supported in non-clustered mode");
    // When it is created as shared, then that refusal is thrown after one try
    await expect(
      createShared(async () => {
        calls += 1;
        throw refused;
      }),
    ).rejects.toBe(refused);
    expect(calls).toBe(1);
    expect(isCreateRace(refused)).toBe(false);
    expect(isCreateRace(new Error("subjects overlap with an existing stream"))).toBe(false);
  });

  it("throws the race's refusal once the budget is spent", async () => {
    // Given a clock that runs 400 ms per try and a race that never ends
    let clock = 0;
    let calls = 0;
    const race = refusal(10065, "subjects overlap with an existing stream");
    // When it is created as shared with a 1 s budget
    const attempt = createShared(
      async () => {
        calls += 1;
        clock += 400;
        throw race;
      },
      { budgetMs: 1_000, now: () => clock },
    );
    // Then the last refusal is thrown after the budget, not retried for ever
    await expect(attempt).rejects.toBe(race);
    expect(calls).toBe(3);
  });
});
