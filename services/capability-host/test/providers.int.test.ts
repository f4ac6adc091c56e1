// Capability providers on a real nats-server: a provider registered at run time is callable
// and typechecked with no host change; its registration and revocation are recorded in the
// CAPABILITY_PROVIDERS bucket; a call to a gone provider fails naming the namespace; and
// scenario 1b with the example `repo` provider (a separate process) settles with 7.

import { planScriptResultRender } from "@agentrt/agent-core";
import { REGISTER_SUBJECT, registerSubject, REVOKE_SUBJECT, startCapabilityProvider } from "@agentrt/capability-sdk";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import { startNatsServer } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROVIDERS_BUCKET } from "../src/index.ts";
import { type HostFixture, requestScript, settlementOf, startFixture, uniquePath, waitSettled } from "./harness.ts";
import { makeRepoFixture, type RepoFixture, startRepoProviderProcess } from "./repo-fixture.ts";

let fx: HostFixture;
let repo: RepoFixture;
beforeAll(async () => {
  fx = await startFixture({ host: { providerCallTimeoutMs: 3_000 } });
  repo = makeRepoFixture(7, 2);
});
afterAll(async () => {
  await fx?.stop();
  repo?.remove();
});

const WEATHER_DTS = `interface Itx { weather: { forecast(args: { city: string }): Promise<{ city: string; tempC: number }> } }`;

describe("capability providers", () => {
  it("a provider registered at run time is callable, typechecked, recorded, and fails clearly once revoked", async () => {
    const providerNc = await connect({ servers: fx.server.url });
    const provider = await startCapabilityProvider(providerNc, {
      namespace: "weather",
      declarations: WEATHER_DTS,
      methods: { forecast: (args, caller) => ({ city: (args[0] as { city: string }).city, tempC: 4, caller: caller.agentPath }) },
    });
    const path = uniquePath("weather");
    const call = await requestScript(fx, path, 'return await itx.weather.forecast({ city: "Oslo" });');
    expect((await waitSettled(fx.store, path, call.executionId)).payload.settlement).toEqual({
      status: "succeeded",
      result: { city: "Oslo", tempC: 4, caller: path },
    });

    const typo = await requestScript(fx, path, 'return await itx.weather.forcast({ city: "Oslo" });');
    const t = (await waitSettled(fx.store, path, typo.executionId)).payload.settlement;
    expect(t).toMatchObject({ status: "failed", failureKind: "typecheck" });
    expect(t.status === "failed" && t.error).toContain("Property 'forcast' does not exist");
    expect(t.status === "failed" && t.error).toContain("Did you mean 'forecast'?");

    const kv = await new Kvm(fx.nc).open(PROVIDERS_BUCKET);
    expect(JSON.parse((await kv.get("weather"))!.string())).toMatchObject({ namespace: "weather", methods: ["forecast"], instanceId: provider.instanceId });

    await provider.stop();
    const history = [];
    for await (const e of await kv.history({ key: "weather" })) history.push(e.operation);
    expect(history[0]).toBe("PUT");
    expect(history.at(-1)).toBe("DEL");

    const after = await requestScript(fx, path, 'return await itx.weather.forecast({ city: "Oslo" });');
    const a = (await waitSettled(fx.store, path, after.executionId)).payload.settlement;
    expect(a).toMatchObject({ status: "failed", failureKind: "runtime" });
    expect(a.status === "failed" && a.error).toContain('no capability provider registered the namespace "weather"');
    await providerNc.close();
  });

  it("a namespace is registered on its own subject; a body naming another is refused; an earlier provider's shared subject still works", async () => {
    const nc = await connect({ servers: fx.server.url });
    const kv = await new Kvm(fx.nc).open(PROVIDERS_BUCKET);
    const registration = (namespace: string, instanceId: string) =>
      JSON.stringify({ namespace, instanceId, methods: ["ping"], declarations: `interface Itx { ${namespace}: { ping(): Promise<string> } }`, ttlMs: 60_000 });
    try {
      const elsewhere = (await nc.request(registerSubject("alpha"), registration("beta", "beta-1"), { timeout: 5_000 })).json<{ ok: boolean; error?: string }>();
      expect(elsewhere).toEqual({
        ok: false,
        error: 'namespace: "beta" was sent on agentrt.capabilities.register.alpha, the subject of "alpha"; a namespace is registered and revoked only on its own subject (agentrt.capabilities.register.beta)',
      });
      expect(await kv.get("beta")).toBeNull();
      expect((await nc.request(registerSubject("beta"), registration("beta", "beta-1"), { timeout: 5_000 })).json()).toEqual({ ok: true });
      expect((await kv.get("beta"))?.json<{ instanceId: string }>().instanceId).toBe("beta-1");
      // An earlier provider registers every namespace on the one shared subject.
      expect((await nc.request(REGISTER_SUBJECT, registration("gamma", "gamma-1"), { timeout: 5_000 })).json()).toEqual({ ok: true });
      expect((await kv.get("gamma"))?.json<{ instanceId: string }>().instanceId).toBe("gamma-1");
      for (const ns of ["beta", "gamma"]) {
        expect((await nc.request(REVOKE_SUBJECT, JSON.stringify({ namespace: ns, instanceId: `${ns}-1` }), { timeout: 5_000 })).json()).toEqual({ ok: true });
        expect((await kv.get(ns))?.operation).toBe("DEL");
      }
    } finally {
      await nc.close();
    }
  });

  it("the SDK falls back to the shared subject when only a host of an earlier version answers", async () => {
    // A NATS of its own, where the only host listens on the shared subjects, as earlier versions did.
    const server = await startNatsServer();
    const olderHost = await connect({ servers: server.url });
    const nc = await connect({ servers: server.url });
    const seen: string[] = [];
    for (const subject of [REGISTER_SUBJECT, REVOKE_SUBJECT]) {
      olderHost.subscribe(subject, {
        callback: (_e, msg) => {
          seen.push(`${msg.subject} ${msg.json<{ namespace: string }>().namespace}`);
          msg.respond(JSON.stringify({ ok: true }));
        },
      });
    }
    await olderHost.flush();
    try {
      const provider = await startCapabilityProvider(nc, { namespace: "legacy", declarations: "interface Itx { legacy: { ping(): Promise<string> } }", methods: { ping: () => "pong" }, registerTimeoutMs: 5_000 });
      await provider.stop();
      expect(seen).toEqual([`${REGISTER_SUBJECT} legacy`, `${REVOKE_SUBJECT} legacy`]);
    } finally {
      await nc.close();
      await olderHost.close();
      await server.stop();
    }
  });

  it("a call or a result past NATS's message limit fails at once, saying so, not as a provider gone after its timeout", async () => {
    const providerNc = await connect({ servers: fx.server.url });
    const provider = await startCapabilityProvider(providerNc, {
      namespace: "bulk",
      declarations: `interface Itx { bulk: { size(text: string): Promise<number>; make(length: number): Promise<string> } }`,
      methods: { size: (args) => (args[0] as string).length, make: (args) => "y".repeat(args[0] as number) },
    });
    try {
      const path = uniquePath("bulk");
      const code = [
        "const out: string[] = [];",
        "const started = Date.now();",
        'try { out.push(String(await itx.bulk.size("x".repeat(2_000_000)))); } catch (e) { out.push(String(e)); }',
        "try { out.push(String((await itx.bulk.make(2_000_000)).length)); } catch (e) { out.push(String(e)); }",
        'out.push(String(await itx.bulk.size("x".repeat(1_000))), String((await itx.bulk.make(1_000)).length));',
        "out.push(Date.now() - started < 2_000 ? \"fast\" : \"slow\");",
        "return out;",
      ];
      const s = await settlementOf(fx, path, code);
      if (s.status !== "succeeded") throw new Error(`expected success, got ${JSON.stringify(s)}`);
      const [call, result, ...rest] = s.result as string[];
      expect(call).toContain("itx.bulk.size was not called: its arguments are 2000");
      expect(call).toContain("(the server's max_payload, less room for headers). Pass less per call.");
      expect(result).toContain("the result of a call to itx.bulk is 2000");
      expect(result).toContain("past the 1048576 bytes one NATS message carries (the server's max_payload); return less per call");
      // The provider serves on, and neither failure waited for the call timeout (3 s here).
      expect(rest).toEqual(["1000", "1000", "fast"]);
    } finally {
      await provider.stop();
      await providerNc.close();
    }
  });

  it("scenario 1b: itx.repo.listPulls from the example provider process settles 7, and a killed provider fails naming itx.repo", async () => {
    const child = await startRepoProviderProcess(fx.server.url, repo);
    try {
      const path = uniquePath("scenario-1b");
      const code = 'return (await itx.repo.listPulls({ state: "open" })).length;';
      const { executionId, requestedOffset } = await requestScript(fx, path, code, { executionId: "agent-output:33" });
      const settled = await waitSettled(fx.store, path, executionId);
      expect(settled.payload).toEqual({ executionId: "agent-output:33", settlement: { status: "succeeded", result: 7 } });

      // The reducer's render of this settlement (agent-core), with the measured duration.
      const events = await fx.store.read(path);
      const requested = events.find((e) => e.offset === requestedOffset)!;
      const durationMs = Date.parse(settled.createdAt) - Date.parse(requested.createdAt);
      const plan = planScriptResultRender({ executionId, settlement: settled.payload.settlement, durationMs, settledOffset: settled.offset, historyLimit: 30_000 });
      expect(plan.kind).toBe("inline");
      if (plan.kind === "inline") expect(plan.event.payload.content).toMatch(/^Your script returned \(in \d+(\.\d)?m?s\):\n```json\n7\n```\n/);

      // The other repo methods run real git.
      const more = await requestScript(fx, path, "const log = await itx.repo.log({ limit: 5 }); const files = await itx.repo.files(); const readme = await itx.repo.read({ path: 'README.md' }); return { subjects: log.map((c) => c.subject), files, readme };");
      expect((await waitSettled(fx.store, path, more.executionId)).payload.settlement).toEqual({
        status: "succeeded",
        result: { subjects: ["Initial commit"], files: ["README.md"], readme: "# demo repo\n" },
      });

      child.kill("SIGKILL");
      await new Promise((resolve) => child.once("exit", resolve));
      const gone = await requestScript(fx, path, code);
      const g = (await waitSettled(fx.store, path, gone.executionId)).payload.settlement;
      expect(g).toMatchObject({ status: "failed", failureKind: "runtime" });
      expect(g.status === "failed" && g.error).toMatch(/The capability provider for itx\.repo is gone/);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });
});
