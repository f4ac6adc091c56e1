// Every live provider's declarations go into every script's typecheck, and a registration lives
// for up to 10 minutes: a host takes at most MAX_PROVIDER_NAMESPACES namespaces and
// MAX_PROVIDER_DECLARATIONS characters of declarations in all. A probe had registered 100
// namespaces of 195 KB each, and every script on the host then failed its typecheck.

import { REGISTER_SUBJECT } from "@agentrt/capability-sdk";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_PROVIDER_DECLARATIONS, MAX_PROVIDER_NAMESPACES } from "../src/providers/registry.ts";
import { type HostFixture, settlementOf, startFixture, uniquePath } from "./harness.ts";

let fx: HostFixture;
beforeAll(async () => {
  fx = await startFixture();
});
afterAll(async () => fx?.stop());

/** A namespace's declarations padded with a comment to about `size` characters. */
const declarations = (namespace: string, size = 0) => `interface Itx { ${namespace}: { ping(): Promise<number> } }\n// ${"x".repeat(Math.max(0, size - 60))}\n`;

describe("capability provider registrations are bounded", () => {
  it("refuses a registration past the declarations all providers may have together, naming the bound; scripts still typecheck", async () => {
    const nc = await connect({ servers: fx.server.url });
    const register = async (namespace: string, size: number, instanceId = `${namespace}-1`) =>
      JSON.parse((await nc.request(REGISTER_SUBJECT, JSON.stringify({ namespace, instanceId, methods: ["ping"], declarations: declarations(namespace, size), ttlMs: 60_000 }), { timeout: 10_000 })).string()) as {
        ok: boolean;
        error?: string;
      };
    try {
      // Given providers holding most of the bound
      const each = 190_000;
      const fit = Math.floor(MAX_PROVIDER_DECLARATIONS / each);
      for (let i = 0; i < fit; i++) expect(await register(`big${i}`, each)).toEqual({ ok: true });
      // When one more would pass it, then it is refused and not recorded
      const refused = await register("onemore", each);
      expect(refused.ok).toBe(false);
      expect(refused.error).toContain(`past the ${MAX_PROVIDER_DECLARATIONS} every script's typecheck takes in all; "onemore" was not registered`);
      expect(fx.host!.registry.live().map((e) => e.namespace)).not.toContain("onemore");
      // A renewal of a registered namespace is counted once, not twice
      expect(await register("big0", each, "big0-1")).toEqual({ ok: true });
      // And a script still typechecks and runs
      expect(await settlementOf(fx, uniquePath("after-big"), "return 1 + 1;")).toEqual({ status: "succeeded", result: 2 });
    } finally {
      await nc.close();
    }
  });

  it(`refuses a namespace past the ${MAX_PROVIDER_NAMESPACES} a host takes`, async () => {
    const nc = await connect({ servers: fx.server.url });
    try {
      const live = fx.host!.registry.live().length;
      const outcomes: boolean[] = [];
      for (let i = live; i <= MAX_PROVIDER_NAMESPACES; i++) {
        const request = { namespace: `small${i}`, instanceId: `small${i}`, methods: ["ping"], declarations: declarations(`small${i}`), ttlMs: 60_000 };
        outcomes.push((JSON.parse((await nc.request(REGISTER_SUBJECT, JSON.stringify(request), { timeout: 10_000 })).string()) as { ok: boolean }).ok);
      }
      expect(outcomes.at(-1)).toBe(false);
      expect(outcomes.slice(0, -1).every(Boolean)).toBe(true);
      expect(fx.host!.registry.live()).toHaveLength(MAX_PROVIDER_NAMESPACES);
    } finally {
      await nc.close();
    }
  });
});
