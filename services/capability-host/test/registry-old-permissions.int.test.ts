// A host whose NATS still runs an earlier version's permission lists (an external NATS not yet
// given the new file, or a NATS node not yet rolled): the host may not subscribe to the
// per-namespace registration subjects. The refused subscriptions are logged, not read: reading
// the empty message nats.js calls back with threw inside the client's reader and stopped the
// host's connection for good. The host keeps answering the shared subject, and a provider of
// this version, finding nobody on its namespace's subject, registers there.

import { startCapabilityProvider } from "@agentrt/capability-sdk";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import { NATS_PERMISSIONS, natsInboxPrefix } from "@agentrt/service-kit";
import { startNatsServer, testLogger, waitFor } from "@agentrt/testing";
import { expect, it } from "vitest";
import { PROVIDERS_BUCKET, ProviderRegistry } from "../src/index.ts";

it("a host refused the per-namespace subjects keeps its connection and serves providers on the shared subject", { timeout: 60_000 }, async () => {
  const host = NATS_PERMISSIONS["capability-host"];
  // What the earlier lists granted: the shared subjects only.
  const earlier = host.subscribe.allow.filter((s) => !s.endsWith(".register.*") && !s.endsWith(".revoke.*"));
  expect(earlier.length).toBe(host.subscribe.allow.length - 2);
  const server = await startNatsServer({
    extraConfig: `authorization { users: [
      { user: "capability-host", password: "h", permissions: { publish: { allow: ${JSON.stringify(host.publish.allow)} }, subscribe: { allow: ${JSON.stringify(earlier)} }, allow_responses: true } }
      { user: "test", password: "t" }
    ] }`,
  });
  const hostNc = await connect({ servers: server.url, user: "capability-host", pass: "h", inboxPrefix: natsInboxPrefix("capability-host") });
  const providerNc = await connect({ servers: server.url, user: "test", pass: "t" });
  const registry = new ProviderRegistry(hostNc, await new Kvm(hostNc).create(PROVIDERS_BUCKET), testLogger("registry"));
  try {
    await registry.start();
    await hostNc.flush();
    await new Promise((r) => setTimeout(r, 300)); // the server's refusals arrive
    const provider = await startCapabilityProvider(providerNc, {
      namespace: "weather",
      declarations: "interface Itx { weather: { today(): Promise<string> } }",
      methods: { today: () => "sunny" },
      registerTimeoutMs: 10_000,
      log: { info: () => {}, warn: () => {} },
    });
    await waitFor(async () => registry.live().some((e) => e.namespace === "weather" && e.instanceId === provider.instanceId), { timeoutMs: 10_000 });
    // The host's connection still carries its own requests.
    await expect(Promise.race([hostNc.flush().then(() => "flushed"), new Promise((r) => setTimeout(() => r("flush hung"), 3_000))])).resolves.toBe("flushed");
    await provider.stop();
    await waitFor(async () => !registry.live().some((e) => e.namespace === "weather"), { timeoutMs: 10_000 });
  } finally {
    registry.stop();
    await providerNc.close();
    await hostNc.close();
    await server.stop();
  }
});
