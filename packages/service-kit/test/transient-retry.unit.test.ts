// The in-process retry of a settlement across a NATS blip (issue 16): which failures it
// repeats, that it is bounded, and that shutdown stops it.

import { AgentRuntimeError } from "@agentrt/contract";
import { describe, expect, it } from "vitest";
import { errors } from "@nats-io/nats-core";
import { JetStreamApiError } from "@nats-io/jetstream";
import { isTransientNatsError } from "@agentrt/streams/jetstream";
import { isNatsNotAnswering, isTransientFailure, retryTransient, untilNatsAnswers } from "../src/index.ts";

const unavailable = () => new AgentRuntimeError("unavailable", "append: NATS is unavailable (TIMEOUT); retry later.", { retryable: true });

/** An operation failing with `errors` in turn, then answering "landed". */
function failing(...errors: unknown[]): { op: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return {
    op: async () => {
      const error = errors[calls++];
      if (error !== undefined) throw error;
      return "landed";
    },
    calls: () => calls,
  };
}

describe("which failures are transient", () => {
  it("is NATS not answering (the stores' retryable `unavailable`), nothing else", () => {
    expect(isTransientFailure(unavailable())).toBe(true);
    expect(isTransientFailure(new AgentRuntimeError("unavailable", "told not to retry"))).toBe(false);
    expect(isTransientFailure(new AgentRuntimeError("conflict", "too many writers", { retryable: true }))).toBe(false);
    expect(isTransientFailure(new AgentRuntimeError("invalid_event", "bad"))).toBe(false);
    expect(isTransientFailure(new Error("TIMEOUT"))).toBe(false);
  });
});

describe("retryTransient", () => {
  it("repeats an operation failing transiently until it lands, pausing 100 ms then doubling", async () => {
    const { op, calls } = failing(unavailable(), unavailable(), unavailable());
    const pauses: number[] = [];
    expect(await retryTransient(op, { onRetry: (_error, _attempt, ms) => pauses.push(ms) })).toBe("landed");
    expect(calls()).toBe(4);
    expect(pauses).toEqual([100, 200, 400]);
  });

  it("throws any other failure at once, as before", async () => {
    const refused = new AgentRuntimeError("invalid_event", "bad");
    const { op, calls } = failing(refused);
    await expect(retryTransient(op)).rejects.toBe(refused);
    expect(calls()).toBe(1);
    const conflict = new AgentRuntimeError("conflict", "too many writers", { retryable: true });
    const second = failing(unavailable(), conflict);
    await expect(retryTransient(second.op, { firstDelayMs: 1 })).rejects.toBe(conflict);
    expect(second.calls()).toBe(2);
  });

  it("gives up with the last error once its budget is spent, never starting an attempt after it", async () => {
    let clock = 0;
    let calls = 0;
    const op = async (): Promise<string> => {
      calls++;
      clock += 1_000; // every attempt waits for its publish timeout
      throw unavailable();
    };
    const pauses: number[] = [];
    const started = Date.now();
    const error = await retryTransient(op, {
      budgetMs: 10_000,
      firstDelayMs: 1,
      maxDelayMs: 4,
      now: () => clock,
      onRetry: (_e, _a, ms) => {
        pauses.push(ms);
        clock += ms * 1_000; // the test's clock runs 1 000× faster than the pauses
      },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentRuntimeError);
    // Attempts at 0, 2, 5, 10 s of the test's clock: none after the 10 s budget.
    expect(calls).toBe(4);
    expect(pauses).toEqual([1, 2, 4]);
    expect(clock).toBeLessThanOrEqual(11_000);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("caps each pause at maxDelayMs", async () => {
    const { op } = failing(...Array.from({ length: 6 }, unavailable));
    const pauses: number[] = [];
    await retryTransient(op, { firstDelayMs: 1, maxDelayMs: 8, onRetry: (_e, _a, ms) => pauses.push(ms) });
    expect(pauses).toEqual([1, 2, 4, 8, 8, 8]);
  });

  it("stops on shutdown: an abort ends the pause at once and the last error is thrown", async () => {
    const shutdown = new AbortController();
    const first = unavailable();
    const { op, calls } = failing(first, unavailable());
    const started = Date.now();
    const outcome = retryTransient(op, { signal: shutdown.signal, firstDelayMs: 5_000 });
    setTimeout(() => shutdown.abort(), 20);
    await expect(outcome).rejects.toBe(first);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(calls()).toBe(1);
    // Already aborted: a failing attempt is not repeated.
    const again = failing(unavailable());
    await expect(retryTransient(again.op, { signal: shutdown.signal })).rejects.toBeInstanceOf(AgentRuntimeError);
    expect(again.calls()).toBe(1);
  });
});

describe("a start-up step waits for NATS to answer", () => {
  const named = (name: string, message = name) => Object.assign(new Error(message), { name });

  it("counts the client's timeouts, no responders and an unenabled JetStream as not answering, nothing else", () => {
    expect(isNatsNotAnswering(unavailable())).toBe(true);
    expect(isNatsNotAnswering(new errors.TimeoutError())).toBe(true);
    expect(isNatsNotAnswering(named("JetStreamNotEnabled", "jetstream is not enabled"))).toBe(true);
    expect(isNatsNotAnswering(new JetStreamApiError({ code: 503, err_code: 10008, description: "JetStream system temporarily unavailable" }))).toBe(true);
    expect(isNatsNotAnswering(new Error("wrapped", { cause: new errors.TimeoutError() }))).toBe(true);
    // A refusal is not a wait: bad config, permissions, a stream that conflicts.
    expect(isNatsNotAnswering(new JetStreamApiError({ code: 400, err_code: 10058, description: "stream name already in use" }))).toBe(false);
    expect(isNatsNotAnswering(named("PermissionViolationError", "Permissions Violation for Publish"))).toBe(false);
    expect(isNatsNotAnswering(new AgentRuntimeError("invalid_event", "bad"))).toBe(false);
  });

  it("waits for everything the store's rule calls transient (one rule), and at start-up also for a JetStream still recovering", () => {
    const transientToTheStore = [
      new errors.TimeoutError(),
      new errors.NoRespondersError("$JS.API.STREAM.INFO.x"),
      new errors.RequestError("no responders", { cause: new errors.NoRespondersError("$JS.API.STREAM.INFO.x") }),
      Object.assign(new Error("jetstream is not enabled", { cause: new errors.NoRespondersError("$JS.API.INFO") }), { name: "JetStreamNotEnabled" }),
      new JetStreamApiError({ code: 404, err_code: 10014, description: "consumer not found" }),
    ];
    for (const error of transientToTheStore) {
      expect(isTransientNatsError(error)).toBe(true);
      expect(isNatsNotAnswering(error)).toBe(true);
    }
    // Without a cause it is a server still recovering its store: the store's writes do not
    // retry it (after start-up it means a server without JetStream), the start-up wait does.
    const recovering = named("JetStreamNotEnabled", "jetstream is not enabled");
    expect(isTransientNatsError(recovering)).toBe(false);
    expect(isNatsNotAnswering(recovering)).toBe(true);
    // And a cluster whose restarted nodes have not reported to the new meta leader yet places no
    // replicated stream: a wait at start-up, never a retried write afterwards.
    const placing = new JetStreamApiError({ code: 400, err_code: 10005, description: "no suitable peers for placement, miscellaneous issue" });
    expect(isTransientNatsError(placing)).toBe(false);
    expect(isNatsNotAnswering(placing)).toBe(true);
    expect(isNatsNotAnswering(new Error("kv bucket", { cause: placing }))).toBe(true);
  });

  it("repeats the step until NATS answers, logging each wait", async () => {
    // Given a step that times out twice (leaders being elected), then answers
    const { op, calls } = failing(new errors.TimeoutError(), named("JetStreamNotEnabled"));
    const warnings: string[] = [];
    // When it runs as a start-up step
    const result = await untilNatsAnswers("event store", op, { logger: { warn: (_o, msg) => warnings.push(msg) } });
    // Then it answers on the third attempt, having said why it waited
    expect(result).toBe("landed");
    expect(calls()).toBe(3);
    expect(warnings).toEqual(["event store: NATS is not answering yet; waiting for it", "event store: NATS is not answering yet; waiting for it"]);
  });

  it("throws a refusal at once, and gives up on silence after its budget", async () => {
    const refusal = named("PermissionViolationError");
    const refused = failing(refusal);
    await expect(untilNatsAnswers("work stream", refused.op)).rejects.toBe(refusal);
    expect(refused.calls()).toBe(1);
    // A clock that jumps 1 s per reading: the 2 s budget is spent after a couple of attempts.
    let clock = 0;
    const silent = failing(...Array.from({ length: 20 }, () => new errors.TimeoutError()));
    await expect(untilNatsAnswers("work stream", silent.op, { budgetMs: 2_000, now: () => (clock += 1_000) })).rejects.toBeInstanceOf(errors.TimeoutError);
    expect(silent.calls()).toBeLessThanOrEqual(2);
  });
});
