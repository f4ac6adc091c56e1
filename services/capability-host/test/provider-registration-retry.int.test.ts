// A host that cannot record a provider's registration (its KV put failed while NATS elected a
// leader) answers `retryable`, and the provider tries again instead of giving up: the chaos soak
// saw the example provider process exit on "the host refused: … jetstream is not enabled". A real
// refusal (bad declarations) still ends the start at once.

import { REGISTER_SUBJECT, ProviderRegistrationError, startCapabilityProvider } from "@agentrt/capability-sdk";
import { connect } from "@nats-io/transport-node";
import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

const quiet = { info: () => undefined, warn: () => undefined };

describe("a provider's registration", () => {
  it("given a host that could not record it, the provider tries again and registers", async () => {
    const hostNc = await connect({ servers: server.url });
    const providerNc = await connect({ servers: server.url });
    const answers = [
      { ok: false, error: "the host could not record the registration: jetstream is not enabled", retryable: true },
      { ok: true },
    ];
    let asked = 0;
    hostNc.subscribe(REGISTER_SUBJECT, { callback: (_e, msg) => void msg.respond(JSON.stringify(answers[Math.min(asked++, answers.length - 1)])) });
    try {
      const provider = await startCapabilityProvider(providerNc, {
        namespace: "flaky",
        declarations: "interface Itx { flaky: { ping(): Promise<string> } }",
        methods: { ping: () => "pong" },
        retry: { initialMs: 10, maxMs: 50 },
        log: quiet,
      });
      expect(asked).toBeGreaterThanOrEqual(2);
      expect(provider.instanceId).toMatch(/^flaky-/);
    } finally {
      await providerNc.close();
      await hostNc.close();
    }
  });

  it("given a host that refuses it, the start fails at once with the host's reason", async () => {
    const hostNc = await connect({ servers: server.url });
    const providerNc = await connect({ servers: server.url });
    let asked = 0;
    hostNc.subscribe(REGISTER_SUBJECT, { callback: (_e, msg) => void (asked++, msg.respond(JSON.stringify({ ok: false, error: "declarations: bad" }))) });
    try {
      const started = startCapabilityProvider(providerNc, { namespace: "refused", declarations: "nope", methods: { ping: () => "pong" }, retry: { initialMs: 10, maxMs: 50 }, log: quiet });
      await expect(started).rejects.toBeInstanceOf(ProviderRegistrationError);
      await expect(started).rejects.toThrow(/the host refused "refused": declarations: bad/);
      expect(asked).toBe(1);
    } finally {
      await providerNc.close();
      await hostNc.close();
    }
  });
});
