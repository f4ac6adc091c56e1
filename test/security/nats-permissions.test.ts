// NATS least privilege, on a real nats-server started with the generated authorization block
// (packages/service-kit nats-permissions.ts): every service connects as its own user and a
// whole turn works — a user message through the gateway, the reducer's request, the driver's
// streamed reply with a script, the host running it against KV, files and a capability
// provider, the rendered result, the follow-up reply, an interrupt — with not one permissions
// violation in the server's log. That is what proves the lists complete. Then the gateway's
// user is shown to be refused a work item, a lease write and stream deletion, and the driver's
// to remove only its own work consumer (to create it again), and a provider's own user to reach
// only its namespaces (the repo provider runs the turn as `provider-repo`). (That the names
// in the lists are the runtime's own is checked by each service's nats-names unit test.)

import { REGISTER_SUBJECT, registerSubject, revokeSubject, startCapabilityProvider } from "@agentrt/capability-sdk";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { type NatsConnection, headers as natsHeaders } from "@nats-io/nats-core";
import { NATS_NAMES, NATS_PERMISSIONS, NATS_SERVICE_USERS, loadEventSigning, natsInboxPrefix, serveInterrupts, stepDownStreamLeader, workStreamName } from "@agentrt/service-kit";
import { JetStreamEventStore } from "@agentrt/streams/jetstream";
import { testLogger, userMessage, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBareAgent } from "../support/turns.ts";
import { startNatsUsersSystem, type NatsUsersSystem } from "./support/nats-users-system.ts";

const PATH = "/agents/perm/demo";
const SCRIPT = [
  "```ts",
  "async (itx) => {",
  '  await itx.kv.set("visits", { n: 1 });',
  '  await itx.files.write("notes/a.md", "hello files");',
  '  const pulls = await itx.repo.listPulls({ state: "open" });',
  '  await itx.chat.sendMessage("counting pulls");',
  '  return { open: pulls.length, kv: await itx.kv.get("visits"), text: await itx.files.get("notes/a.md").text() };',
  "}",
  "```",
].join("\n");

let system: NatsUsersSystem;
beforeAll(async () => {
  system = await startNatsUsersSystem({
    model: {
      replies: [
        { text: SCRIPT, tokensPerSecond: 2000 },
        { text: "All done: 3 open pulls.", tokensPerSecond: 2000 },
        // Slow enough to be interrupted mid-stream.
        { text: "This reply is long and slow and will be interrupted by the user before it ends. ".repeat(20), tokensPerSecond: 20 },
      ],
      defaultReply: { text: "Fine, stopping there." },
    },
  });
});
afterAll(async () => system?.stop());

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${system.gatewayUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status}: ${JSON.stringify(json)}`);
  return json;
};
const say = (content: string, interrupt = false) =>
  api("POST", `/v1/streams/${encodeURIComponent(PATH)}/events`, {
    events: [
      {
        type: "agents/context-added",
        payload: { role: "user", content, actor: { type: "user", origin: "web" }, ...(interrupt ? { llmRequestPolicy: { behaviour: "interrupt-current-request" } } : {}) },
      },
    ],
  });
const stream = () => system.store.read(PATH);

describe("every service as its own NATS user", () => {
  it("runs a whole turn (script with KV, files, a provider; follow-up; interrupt) with no permissions violation", { timeout: 180_000 }, async () => {
    await createBareAgent(system.store, PATH, 50);
    // The gateway follows the live lane for this client (its subscribe grant on eph.>).
    const live = fetch(`${system.gatewayUrl}/v1/streams/${encodeURIComponent(PATH)}/subscribe?ephemeral=1`);
    await say("How many pulls are open?");
    await waitFor(async () => (await stream()).some((e) => e.type === "agents/context-added" && e.payload.role === "assistant" && e.payload.content.includes("All done: 3 open pulls.")), {
      timeoutMs: 120_000,
      intervalMs: 200,
    });
    const events = await stream();
    const settled = events.find((e) => e.type === "capability-host/script-run-settled");
    expect(settled?.type === "capability-host/script-run-settled" && settled.payload.settlement).toMatchObject({
      status: "succeeded",
      result: { open: 3, kv: { n: 1 }, text: "hello files" },
    });
    expect(events.some((e) => e.type === "agents/web-message-sent")).toBe(true);
    expect(events.some((e) => e.type === "agent/token-usage-reported")).toBe(true);

    // An interrupt: the reducer asks the driver over core NATS, the driver answers.
    const before = (await stream()).length;
    await say("Tell me a long story.");
    await system.model.waitForRequests(3, 60_000);
    await waitFor(async () => (await system.store.read(PATH, { fromOffset: before })).some((e) => e.type === "agent/llm-request-requested"), { timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 1_000)); // let some of the slow reply stream first
    await say("Stop, that's enough.", true);
    await waitFor(
      async () =>
        (await system.store.read(PATH, { fromOffset: before })).some(
          (e) => e.type === "agent/llm-request-settled" && e.payload.result.status === "cancelled" && e.payload.result.reason === "interrupted-by-user-input",
        ),
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    await (await live).body?.cancel();

    expect(system.violations()).toEqual([]);
    for (const proc of system.processes.all) expect(proc.running, `${proc.name}:\n${proc.logs().slice(-2000)}`).toBe(true);
    const authErrors = system.processes.all.flatMap((p) => p.logs().split("\n").filter((l) => /permission|authorization/i.test(l)).map((l) => `${p.name}: ${l}`));
    expect(authErrors).toEqual([]);
    // Every service signed what it wrote, and every record of the turn was read as signed.
    expect(passedOver()).toEqual([]);
  });
});

/** The agent's subject on the event stream. */
const durableSubjectOf = (path: string) => `ev.${system.store.partitionOf(path)}.${path.slice(1).replaceAll("/", ".")}`;

/** Log lines of services that passed over a record not signed as the event keys require. */
const passedOver = () => system.processes.all.flatMap((p) => p.logs().split("\n").filter((l) => l.includes("passed over a record")).map((l) => `${p.name}: ${l}`));

describe("records not signed as the event keys require", () => {
  it("a record the gateway's user signs with another service's type or as the model, the host's as the model, an unsigned one, or one published again, is passed over by every service; the agent still answers", { timeout: 120_000 }, async () => {
    // Given an agent that answered a turn
    const path = "/agents/perm/forged";
    await createBareAgent(system.store, path, 50);
    await system.store.append(path, [userMessage("hello")]);
    await waitFor(async () => (await system.store.read(path)).some((e) => e.type === "agents/context-added" && e.payload.role === "assistant"), { timeoutMs: 60_000, intervalMs: 100 });
    // When the gateway's NATS user, signing with the gateway's key, appends a title only the reducer may set
    const gw = await system.connectAs("web-gateway");
    const forger = await JetStreamEventStore.open(gw, { partitionCount: system.store.partitionCount, signing: { signer: loadEventSigning(system.eventKeysDir, "web-gateway").signer } });
    await forger.append(path, [{ type: "agent/summary-updated", payload: { title: "FORGED by the gateway" } }]);
    // And a model reply, which is a type the gateway writes (user input) in a role it never may
    await forger.append(path, [{ type: "agents/context-added", payload: { role: "assistant", content: "FORGED model reply by the gateway" } }]);
    // And the capability host's user, with the host's key, answers an open request as the model
    const host = await system.connectAs("capability-host");
    const hostForger = await JetStreamEventStore.open(host, { partitionCount: system.store.partitionCount, signing: { signer: loadEventSigning(system.eventKeysDir, "capability-host").signer } });
    await hostForger.append(path, [{ type: "agents/context-added", payload: { role: "developer", content: "FORGED settlement by the host", llmRequestOffset: 1 } }]);
    // And an unsigned record sets another title, and a copy of the driver's settlement is published again without its expected sequence
    const unsigned = await JetStreamEventStore.open(system.nc, { partitionCount: system.store.partitionCount });
    await unsigned.append(path, [{ type: "agent/summary-updated", payload: { title: "FORGED unsigned" } }]);
    const jsm = await jetstreamManager(system.nc);
    const subject = durableSubjectOf(path);
    const settlementRecord = async () => {
      for (let seq = 1; ; ) {
        const msg = await jsm.direct.getMessage("AGENT_EVENTS", { next_by_subj: subject, seq });
        if (msg === null) throw new Error(`no settlement record on ${subject}`);
        if (new TextDecoder().decode(msg.data).includes('"agent/llm-request-settled"')) return msg;
        seq = msg.seq + 1;
      }
    };
    const copy = await settlementRecord();
    const h = natsHeaders();
    for (const name of copy.header.keys()) if (!name.startsWith("Nats-")) h.set(name, copy.header.get(name));
    await jetstream(system.nc).publish(subject, copy.data, { headers: h });
    // Then the next turn is answered on top of the real records, and nothing forged shows: not in the events, not in the state
    const next = await system.store.append(path, [userMessage("again")]);
    await waitFor(async () => (await system.store.read(path, { fromOffset: next.events[0]!.offset })).some((e) => e.type === "agents/context-added" && e.payload.role === "assistant"), {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    const events = await api("GET", `/v1/streams/${encodeURIComponent(path)}/events`);
    expect(JSON.stringify(events)).not.toContain("FORGED");
    expect(JSON.stringify(await api("GET", `/v1/agents/${encodeURIComponent(path)}/state`))).not.toContain("FORGED");
    expect((events.events as { type: string }[]).filter((e) => e.type === "agent/llm-request-settled")).toHaveLength(2);
    // And each service that read them said why
    const reasons = passedOver().join("\n");
    expect(reasons).toContain('web-gateway does not emit \\"agent/summary-updated\\"');
    expect(reasons).toContain("it is not signed");
    expect(reasons).toContain("it names no sequence it followed");
    expect(reasons).toContain('events[0].payload.role \\"assistant\\" is model output, written by llm-driver');
    expect(reasons).toContain("events[0].payload.llmRequestOffset is model output, which capability-host does not write");
    await gw.close();
    await host.close();
  });
});

describe("the gateway's NATS user is refused what it does not need", () => {
  let gw: NatsConnection;
  beforeAll(async () => {
    gw = await system.connectAs("web-gateway");
  });
  afterAll(async () => gw?.close());

  it("cannot publish a work item", async () => {
    const workBefore = (await (await jetstreamManager(system.nc)).streams.info(workStreamName("llm"))).state.messages;
    await expect(jetstream(gw).publish("work.llm.0", JSON.stringify({ streamPath: PATH, requestOffset: 1 }), { timeout: 3_000 })).rejects.toThrow(/permission/i);
    expect((await (await jetstreamManager(system.nc)).streams.info(workStreamName("llm"))).state.messages).toBe(workBefore);
    expect(system.violations().some((l) => l.includes('"work.llm.0"'))).toBe(true);
  });

  it("cannot write a lease", async () => {
    await expect(new Kvm(gw).open(NATS_NAMES.leasesBucket).then((kv) => kv.put("reducers.partition.0", "mine"))).rejects.toThrow(/permission/i);
    const leases = await new Kvm(system.nc).open(NATS_NAMES.leasesBucket);
    const entry = await leases.get("reducers.partition.0");
    expect(entry === null || entry.string() !== "mine").toBe(true);
  });

  it("cannot delete, purge or reconfigure the event stream, nor ask a driver to stop", async () => {
    const jsm = await jetstreamManager(gw, { checkAPI: false });
    await expect(jsm.streams.delete(NATS_NAMES.eventStream)).rejects.toThrow(/permission/i);
    await expect(jsm.streams.purge(NATS_NAMES.eventStream)).rejects.toThrow(/permission/i);
    await expect(jsm.streams.update(NATS_NAMES.eventStream, { description: "reconfigured by the gateway" })).rejects.toThrow(/permission/i);
    await expect(gw.request(NATS_NAMES.interruptSubject, JSON.stringify({ streamPath: PATH, requestOffset: 1 }), { timeout: 3_000 })).rejects.toThrow(/permission/i);
  });

  it("cannot reconfigure the key index every service writes: no subjects or sources added, no trim, no seal", async () => {
    const jsm = await jetstreamManager(gw, { checkAPI: false });
    const name = `KV_${NATS_NAMES.keyIndexBucket}`;
    const before = (await (await jetstreamManager(system.nc)).streams.info(name)).config;
    for (const change of [
      { subjects: [...before.subjects, `${natsInboxPrefix("capability-host")}.>`, "agentrt.capabilities.call.>"] },
      { sources: [{ name: `KV_${NATS_NAMES.agentKvBucket}` }] },
      { max_msgs: 1 },
      { sealed: true },
    ]) {
      await expect(jsm.streams.update(name, { ...before, ...change }), JSON.stringify(change)).rejects.toThrow(/permission/i);
    }
    const after = (await (await jetstreamManager(system.nc)).streams.info(name)).config;
    expect({ subjects: after.subjects, sources: after.sources, max_msgs: after.max_msgs, sealed: after.sealed }).toEqual({ subjects: before.subjects, sources: before.sources, max_msgs: before.max_msgs, sealed: before.sealed });
  });
});

describe("a request relayed through a JetStream push consumer is not its sender's", () => {
  // nats-server lets whoever may create a consumer name any deliver subject without the right to
  // publish there (nats-server#8274): the gateway's user may create consumers on the event stream.
  async function relay(gw: NatsConnection, name: string, target: string, body: string, options: { group?: string; headers?: Record<string, string> } = {}): Promise<number> {
    const jsm = await jetstreamManager(gw, { checkAPI: false });
    const subject = `${NATS_NAMES.durablePrefix}.zz.relay.${name}`;
    const h = natsHeaders();
    for (const [k, v] of Object.entries(options.headers ?? {})) h.set(k, v);
    await jetstream(gw).publish(subject, body, { headers: h });
    await jsm.consumers.add(NATS_NAMES.eventStream, {
      name,
      deliver_subject: target,
      ...(options.group === undefined ? {} : { deliver_group: options.group }),
      ack_policy: AckPolicy.None,
      filter_subject: subject,
      deliver_policy: DeliverPolicy.Last,
    });
    try {
      await waitFor(async () => (await jsm.consumers.info(NATS_NAMES.eventStream, name)).delivered.consumer_seq > 0, { timeoutMs: 10_000, what: "the relay to deliver" });
      // Time for whoever took it to act on it.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      return (await jsm.consumers.info(NATS_NAMES.eventStream, name)).delivered.consumer_seq;
    } finally {
      await jsm.consumers.delete(NATS_NAMES.eventStream, name);
    }
  }

  it("an interrupt relayed by the gateway's user reaches a driver's interrupt handler but is dropped: no running call is stopped", async () => {
    const driverNc = await system.connectAs("llm-driver");
    const gw = await system.connectAs("web-gateway");
    const handled: unknown[] = [];
    const sub = serveInterrupts(driverNc, (request) => (handled.push(request), { partialText: "stopped" }), testLogger("relay"));
    try {
      await driverNc.flush();
      const delivered = await relay(gw, "relay-interrupt", NATS_NAMES.interruptSubject, JSON.stringify({ streamPath: "/agents/perm/victim", requestOffset: 3 }));
      expect(delivered).toBeGreaterThan(0);
      expect(handled).toEqual([]);
    } finally {
      sub.unsubscribe();
      await gw.close();
      await driverNc.close();
    }
  });

  it("a provider call relayed by the gateway's user, with any authority, reaches the provider but is not run", async () => {
    const providerNc = await system.connectAs("capability-provider");
    const gw = await system.connectAs("web-gateway");
    const calls: unknown[] = [];
    const errors: string[] = [];
    const provider = await startCapabilityProvider(providerNc, {
      namespace: "relayed",
      declarations: "interface Itx { relayed: { read(): Promise<string> } }",
      methods: { read: (args, caller) => (calls.push({ args, caller }), "secret") },
      registerTimeoutMs: 10_000,
      log: { info: () => {}, warn: () => {} },
      onError: (error) => errors.push(String(error)),
    });
    try {
      const call = { method: "read", args: [], caller: { agentPath: "/agents/someone-else/x", executionId: "forged", authority: { grant: [{ prefix: "/", verbs: ["read", "append"] }] } } };
      const delivered = await relay(gw, "relay-call", "agentrt.capabilities.call.relayed", JSON.stringify(call), { group: "provider.relayed", headers: { "Agentrt-Call-Accepted": "1" } });
      expect(delivered).toBeGreaterThan(0);
      expect(calls).toEqual([]);
      expect(errors.some((e) => e.includes("relayed through a JetStream consumer"))).toBe(true);
    } finally {
      await provider.stop();
      await gw.close();
      await providerNc.close();
    }
  });
});

describe("no service reconfigures a bucket or object store its code never changes", () => {
  it("STREAM.UPDATE is granted only on the event stream (to the reducer), the leases (reducer) and the hosts' liveness (host)", () => {
    const updates = Object.fromEntries(NATS_SERVICE_USERS.map((user) => [user, NATS_PERMISSIONS[user].publish.allow.filter((s) => s.startsWith("$JS.API.STREAM.UPDATE."))]));
    expect(updates).toEqual({
      "web-gateway": [],
      "agent-reducer": [`$JS.API.STREAM.UPDATE.${NATS_NAMES.eventStream}`, `$JS.API.STREAM.UPDATE.KV_${NATS_NAMES.leasesBucket}`],
      "llm-driver": [],
      "capability-host": [`$JS.API.STREAM.UPDATE.KV_${NATS_NAMES.hostLivenessBucket}`],
      "capability-provider": [],
    });
  });
});

describe("each NATS user reads only its own replies", () => {
  it("the providers' user (handed to third parties) may not subscribe to every inbox nor to a service's, where tenants' events, KV values and files arrive", async () => {
    const provider = await system.connectAs("capability-provider");
    try {
      // What a provider may read is still delivered to it, on its own prefix.
      const own = provider.subscribe(`${natsInboxPrefix("capability-provider")}.probe`, { max: 1 });
      await provider.flush();
      system.nc.publish(`${natsInboxPrefix("capability-provider")}.probe`, "mine");
      for await (const msg of own) expect(msg.string()).toBe("mine");
      for (const subject of ["_INBOX.>", `${natsInboxPrefix("capability-host")}.>`, `${natsInboxPrefix("web-gateway")}.>`]) {
        const sub = provider.subscribe(subject);
        const outcome = await Promise.race([sub.closed, new Promise((resolve) => setTimeout(() => resolve("still open after 3 s"), 3_000))]);
        expect(String(outcome), subject).toMatch(/permission/i);
      }
    } finally {
      await provider.close();
    }
  });

  it("a service's user may not read another service's replies either", async () => {
    const gateway = await system.connectAs("web-gateway");
    try {
      const sub = gateway.subscribe(`${natsInboxPrefix("capability-host")}.>`);
      const outcome = await Promise.race([sub.closed, new Promise((resolve) => setTimeout(() => resolve("still open after 3 s"), 3_000))]);
      expect(String(outcome)).toMatch(/permission/i);
    } finally {
      await gateway.close();
    }
  });
});

describe("a worker's NATS user and the work consumers", () => {
  let driver: NatsConnection;
  beforeAll(async () => {
    driver = await system.connectAs("llm-driver");
  });
  afterAll(async () => driver?.close());

  it("may remove and create again its own durable consumer and ask its work stream's leader to step down (the work queue's reconciler does), nobody else's, nor remove a work stream", async () => {
    const jsm = await jetstreamManager(driver, { checkAPI: false });
    const llm = workStreamName("llm");
    const own = await jsm.consumers.info(llm, NATS_NAMES.llmDriverDurable);
    await expect(jsm.consumers.delete(llm, NATS_NAMES.llmDriverDurable)).resolves.toBe(true);
    await jsm.consumers.add(llm, own.config);
    expect((await jsm.consumers.info(llm, NATS_NAMES.llmDriverDurable)).config.ack_wait).toBe(own.config.ack_wait);
    await expect(jsm.consumers.delete(workStreamName("script"), NATS_NAMES.hostDurable)).rejects.toThrow(/permission/i);
    await expect(jsm.streams.delete(llm)).rejects.toThrow(/permission/i);
    await expect(jsm.streams.purge(llm)).rejects.toThrow(/permission/i);
    // The stepdown is the driver's to ask for its own work stream (a single server answers that
    // it has no cluster: an answer, not a refusal); the host's work stream is not its to ask.
    await expect(stepDownStreamLeader(jsm, llm)).rejects.toThrow(/was refused/);
    await expect(stepDownStreamLeader(jsm, workStreamName("script"))).rejects.toThrow(/permission/i);
  });
});

describe("work claims: each kind's workers have a bucket of their own", () => {
  it("the host's user may not write the drivers' claims, nor the driver's the hosts' (a forged owner's claim made drivers nak items still running)", async () => {
    const host = await system.connectAs("capability-host");
    const driver = await system.connectAs("llm-driver");
    try {
      const forged = JSON.stringify({ owner: "forged", acks: ["$JS.ACK.AGENT_WORK_LLM.llm-driver.1.1.1.1.1"] });
      await expect(new Kvm(host).open(NATS_NAMES.llmWorkClaimsBucket).then((kv) => kv.put("llm.forged.held", forged))).rejects.toThrow(/permission/i);
      await expect(new Kvm(driver).open(NATS_NAMES.scriptWorkClaimsBucket).then((kv) => kv.put("script.forged.held", forged))).rejects.toThrow(/permission/i);
      // Each writes its own kind's
      await expect(new Kvm(driver).open(NATS_NAMES.llmWorkClaimsBucket).then((kv) => kv.get("llm.nobody.held"))).resolves.toBeNull();
      await expect(new Kvm(host).open(NATS_NAMES.scriptWorkClaimsBucket).then((kv) => kv.get("script.nobody.held"))).resolves.toBeNull();
      const llmClaims = await new Kvm(system.nc).open(NATS_NAMES.llmWorkClaimsBucket);
      expect(await llmClaims.get("llm.forged.held")).toBeNull();
    } finally {
      await host.close();
      await driver.close();
    }
  });
});

describe("a capability provider's own NATS user serves only its namespaces", () => {
  let other: NatsConnection;
  beforeAll(async () => {
    other = await system.connectAs("provider-other");
  });
  afterAll(async () => other?.close());

  const repoEntry = async () => (await (await new Kvm(system.nc).open(NATS_NAMES.providersBucket)).get("repo"))?.json<{ instanceId: string }>();
  const refusedSubscription = async (nc: NatsConnection, subject: string) => {
    const sub = nc.subscribe(subject);
    return String(await Promise.race([sub.closed, new Promise((resolve) => setTimeout(() => resolve("still open after 3 s"), 3_000))]));
  };

  it("may not receive another provider's calls, where the calling agent's arguments arrive", async () => {
    expect(await refusedSubscription(other, `${NATS_NAMES.capabilitiesPrefix}.call.repo`)).toMatch(/permission/i);
    expect(await refusedSubscription(other, `${NATS_NAMES.capabilitiesPrefix}.call.>`)).toMatch(/permission/i);
  });

  it("may not register or revoke another's namespace: not on its subject, not on the shared one, not by naming it in its own registration", async () => {
    const before = await repoEntry();
    expect(before?.instanceId).toMatch(/^repo-/);
    const takeover = JSON.stringify({ namespace: "repo", instanceId: "other-1", methods: ["listPulls"], declarations: "interface Itx { repo: { listPulls(): Promise<unknown> } }", ttlMs: 60_000 });
    await expect(other.request(registerSubject("repo"), takeover, { timeout: 3_000 })).rejects.toThrow(/permission/i);
    await expect(other.request(REGISTER_SUBJECT, takeover, { timeout: 3_000 })).rejects.toThrow(/permission/i);
    // On its own namespace's subject the host answers, and refuses a body naming another namespace.
    const refused = (await other.request(registerSubject("other"), takeover, { timeout: 3_000 })).json<{ ok: boolean; error?: string }>();
    expect(refused).toEqual({ ok: false, error: expect.stringMatching(/namespace: "repo" was sent on agentrt\.capabilities\.register\.other, the subject of "other"/) });
    const revoke = JSON.stringify({ namespace: "repo", instanceId: before!.instanceId });
    await expect(other.request(revokeSubject("repo"), revoke, { timeout: 3_000 })).rejects.toThrow(/permission/i);
    expect((await other.request(revokeSubject("other"), revoke, { timeout: 3_000 })).json<{ ok: boolean }>().ok).toBe(false);
    expect((await repoEntry())?.instanceId).toBe(before!.instanceId);
  });

  it("registers and revokes its own namespace with the SDK", async () => {
    const provider = await startCapabilityProvider(other, {
      namespace: "other",
      declarations: "interface Itx { other: { ping(): Promise<string> } }",
      methods: { ping: () => "pong" },
      registerTimeoutMs: 10_000,
      log: { info: () => {}, warn: () => {} },
    });
    const providers = await new Kvm(system.nc).open(NATS_NAMES.providersBucket);
    expect((await providers.get("other"))?.json<{ instanceId: string }>().instanceId).toBe(provider.instanceId);
    await provider.stop();
    await waitFor(async () => (await providers.get("other"))?.operation === "DEL", { timeoutMs: 10_000 });
  });
});
