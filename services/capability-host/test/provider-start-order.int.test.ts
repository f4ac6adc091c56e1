// Issue #13, order-independent start: a capability provider started before any host keeps
// retrying its registration (logging each retry with the reason) instead of giving up, is
// callable as soon as a host starts, and registers again by itself when the host restarts.

import { type ProviderLog, startCapabilityProvider } from "@agentrt/capability-sdk";
import { waitFor } from "@agentrt/testing";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CapabilityHost, PROVIDERS_BUCKET } from "../src/index.ts";
import { type HostFixture, requestScript, silentLogger, startFixture, uniquePath, waitSettled } from "./harness.ts";
import { makeRepoFixture, type RepoFixture, startRepoProviderProcess } from "./repo-fixture.ts";

const CLOCK_DTS = `interface Itx { clock: { ticks(): Promise<number> } }`;

interface Logged {
  readonly level: "info" | "warn";
  readonly fields: Record<string, unknown>;
  readonly message: string;
}
function recordingLog(): { log: ProviderLog; lines: Logged[] } {
  const lines: Logged[] = [];
  return {
    lines,
    log: {
      info: (fields, message) => lines.push({ level: "info", fields, message }),
      warn: (fields, message) => lines.push({ level: "warn", fields, message }),
    },
  };
}

async function startHost(fx: HostFixture): Promise<void> {
  fx.host = await CapabilityHost.start({ nc: fx.nc, store: fx.hostStore, logger: silentLogger, ackWaitMs: 5_000 });
  await fx.host.consume();
}

let fx: HostFixture;
let providerNc: NatsConnection;
let repo: RepoFixture;
beforeAll(async () => {
  fx = await startFixture({ startHost: false });
  providerNc = await connect({ servers: fx.server.url });
  repo = makeRepoFixture(3, 0);
});
afterAll(async () => {
  await providerNc?.close();
  await fx?.stop();
  repo?.remove();
});

describe("a provider that starts before the host", () => {
  it("retries with backoff and logs why, is callable once a host starts, and re-registers after a host restart", async () => {
    const { log, lines } = recordingLog();
    let ticks = 0;
    const starting = startCapabilityProvider(providerNc, {
      namespace: "clock",
      declarations: CLOCK_DTS,
      methods: { ticks: () => ++ticks },
      ttlMs: 3_000,
      retry: { initialMs: 50, maxMs: 400 },
      log,
    });
    let started = false;
    void starting.then(() => (started = true));

    // No host: the provider keeps trying, each retry logged with the reason, and does not give up.
    await waitFor(() => lines.filter((l) => l.level === "warn").length >= 4, { timeoutMs: 10_000 });
    expect(started).toBe(false);
    const retry = lines.find((l) => l.level === "warn")!;
    expect(retry.fields).toMatchObject({ namespace: "clock", attempt: 1 });
    expect(String(retry.fields.reason)).toMatch(/no responders/i);
    const delays = lines.filter((l) => l.level === "warn").map((l) => Number(l.fields.retryInMs));
    expect(Math.max(...delays)).toBeLessThanOrEqual(400);

    await startHost(fx);
    const provider = await starting;
    expect(lines.at(-1)).toMatchObject({ level: "info", message: "capability registered with a host" });
    const path = uniquePath("clock");
    const first = await requestScript(fx, path, "return await itx.clock.ticks();");
    expect((await waitSettled(fx.store, path, first.executionId)).payload.settlement).toEqual({ status: "succeeded", result: 1 });

    // The host goes away and its record of the provider is lost (as after a lapsed lease or a
    // fresh deployment): the provider notices on its next heartbeat, retries, and registers
    // again without anyone restarting it.
    await fx.host!.stop();
    fx.host = undefined;
    const warnsBefore = lines.filter((l) => l.level === "warn").length;
    await (await new Kvm(fx.nc).open(PROVIDERS_BUCKET)).delete("clock");
    await waitFor(() => lines.filter((l) => l.level === "warn").length > warnsBefore, { timeoutMs: 10_000 });
    await startHost(fx);
    await waitFor(() => lines.some((l) => l.message === "capability registered again"), { timeoutMs: 10_000 });
    const second = await requestScript(fx, path, "return await itx.clock.ticks();");
    expect((await waitSettled(fx.store, path, second.executionId)).payload.settlement).toEqual({ status: "succeeded", result: 2 });
    await provider.stop();
  });

  it("the example provider process started with no host stays up and registers once one appears", async () => {
    await fx.host?.stop();
    fx.host = undefined;
    const registering = startRepoProviderProcess(fx.server.url, repo);
    // Longer than the 10 s the old provider waited before exiting.
    const early = await Promise.race([registering.then(() => "registered", (e: unknown) => `exited: ${String(e)}`), new Promise((r) => setTimeout(() => r("still waiting"), 11_000))]);
    expect(early).toBe("still waiting");
    await startHost(fx);
    const child = await registering;
    try {
      const path = uniquePath("repo-late");
      const call = await requestScript(fx, path, 'return (await itx.repo.listPulls({ state: "open" })).length;');
      expect((await waitSettled(fx.store, path, call.executionId)).payload.settlement).toEqual({ status: "succeeded", result: 3 });
    } finally {
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    }
  });
});
