// Providers act for the calling agent and are told its authority: `caller.authority` carries the
// agent's grant and, for an API-requested script, the requesting key's scope, so a provider that
// acts on stream paths can refuse what the script may not touch (with the contract's rules).
import { authorityRefusal } from "@agentrt/contract";
import { startCapabilityProvider } from "@agentrt/capability-sdk";
import { publishWork } from "@agentrt/service-kit";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type HostFixture, requestScript, startFixture, uniquePath, waitSettled } from "./harness.ts";

const DTS = "interface Itx { paths: { whoami(): Promise<unknown>; touch(path: string): Promise<string> } }";
let fx: HostFixture;
let stopProvider: () => Promise<void>;

beforeAll(async () => {
  fx = await startFixture({ host: { providerCallTimeoutMs: 3_000 } });
  const providerNc = await connect({ servers: fx.server.url });
  const provider = await startCapabilityProvider(providerNc, {
    namespace: "paths",
    declarations: DTS,
    methods: {
      whoami: (_args, caller) => caller.authority ?? null,
      touch: (args, caller) => {
        const path = String(args[0]);
        const authority = caller.authority;
        if (authority === undefined) throw new Error("no authority");
        const refusal = authorityRefusal({ agentPath: caller.agentPath, ...authority }, "append", path);
        if (refusal !== null) throw new Error(refusal);
        return `touched ${path}`;
      },
    },
  });
  stopProvider = async () => {
    await provider.stop();
    await providerNc.close();
  };
});
afterAll(async () => {
  await stopProvider?.();
  await fx?.stop();
});

it("a model-written script's provider call carries the agent's grant; the provider can refuse outside it", async () => {
  const path = uniquePath("provided");
  await fx.store.append(path, [{ type: "agent/created", payload: { grant: [{ prefix: "/shared/board", verbs: ["append"] }] } }]);
  const code = [
    "const who = await itx.paths.whoami();",
    'const inside = await itx.paths.touch("/shared/board/today");',
    'let outside = "";',
    'try { await itx.paths.touch("/agents/other"); } catch (e) { outside = e instanceof Error ? e.message : String(e); }',
    "return { who, inside, outside };",
  ].join("\n");
  const { executionId } = await requestScript(fx, path, code);
  const settlement = (await waitSettled(fx.store, path, executionId)).payload.settlement;
  expect(settlement).toMatchObject({
    status: "succeeded",
    result: { who: { grant: [{ prefix: "/shared/board", verbs: ["append"] }] }, inside: "touched /shared/board/today" },
  });
  expect(settlement.status === "succeeded" && (settlement.result as { outside: string }).outside).toContain("/agents/other is outside this script's grant (append: ");
});

it("an API-requested script's provider call carries the requesting key's scope too", async () => {
  const path = uniquePath("provided-api");
  await fx.store.append(path, [{ type: "agent/created", payload: {} }]);
  const requester = { keyId: "k1", scopes: [{ prefix: path, verbs: ["append"] }] };
  const executionId = "api-1";
  const appended = await fx.store.append(path, [
    {
      type: "capability-host/script-run-requested",
      payload: { code: "return await itx.paths.whoami();", executionId, expiresAt: new Date(Date.now() + 120_000).toISOString(), requester },
    },
  ]);
  await publishWork(jetstream(fx.nc), "script", fx.store.partitionOf(path), { streamPath: path, requestedOffset: appended.events[0]!.offset, executionId });
  expect((await waitSettled(fx.store, path, executionId)).payload.settlement).toEqual({ status: "succeeded", result: { grant: [], requester } });
});
