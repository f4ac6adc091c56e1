// Direct gets on the store's own inbox (direct-get.ts): the same answers as nats.js's
// `jsm.direct.getMessage` (message, sequence, subject, headers; null when there is none), the
// failures classified as before, and the store's reads and key lookups made without a
// nats.js request each (which cost a timer and a stack-capturing Error per read).

import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { type NatsConnection, connect, headers } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";
import { DirectGetError, DirectGets } from "../src/jetstream/direct-get.ts";
import { isTransient } from "../src/jetstream/errors.ts";
import { InboxRequests } from "../src/jetstream/inbox-requests.ts";

let server: NatsServer;
let nc: NatsConnection;
let requests: InboxRequests;
let gets: DirectGets;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "DG", subjects: ["dg.>"], allow_direct: true });
  const h = headers();
  h.set("X-Note", "first");
  const js = jsm.jetstream();
  await js.publish("dg.a", new TextEncoder().encode("a1"), { headers: h });
  await js.publish("dg.b", new TextEncoder().encode("b1"));
  await js.publish("dg.a", new TextEncoder().encode("a2"));
  requests = new InboxRequests(nc, 5_000);
  gets = new DirectGets(requests);
});
afterAll(async () => {
  requests?.close();
  await nc?.close();
  await server?.stop();
});

describe("a direct get on the inbox", () => {
  it("answers what nats.js's direct get answers", async () => {
    const jsm = await jetstreamManager(nc);
    for (const query of [{ last_by_subj: "dg.a" }, { next_by_subj: "dg.a", seq: 1 }, { next_by_subj: "dg.a", seq: 2 }, { next_by_subj: "dg.b", seq: 1 }]) {
      const ours = await gets.get("DG", query);
      const theirs = await jsm.direct.getMessage("DG", query);
      expect(ours).not.toBeNull();
      expect({ seq: ours!.seq, subject: ours!.subject, data: new TextDecoder().decode(ours!.data), note: ours!.header.get("X-Note") }).toEqual({
        seq: theirs!.seq,
        subject: theirs!.subject,
        data: theirs!.string(),
        note: theirs!.header.get("X-Note"),
      });
    }
    expect((await gets.get("DG", { last_by_subj: "dg.a" }))?.seq).toBe(3);
    expect((await gets.get("DG", { next_by_subj: "dg.a", seq: 1 }))?.header.get("X-Note")).toBe("first");
  });

  it("is null when there is no such message", async () => {
    expect(await gets.get("DG", { last_by_subj: "dg.none" })).toBeNull();
    expect(await gets.get("DG", { next_by_subj: "dg.a", seq: 4 })).toBeNull();
  });

  it("fails as transient when no server answers for the stream", async () => {
    const error = await gets.get("NO_SUCH_STREAM", { last_by_subj: "x.y" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(isTransient(error)).toBe(true);
  });

  it("fails as transient when the answer does not come in time, and the next get is unaffected", async () => {
    // Something answers nothing on a stream's direct-get subject: the request times out.
    const silent = nc.subscribe("$JS.API.DIRECT.GET.SILENT.>", { callback: () => undefined });
    const quick = new InboxRequests(nc, 100);
    try {
      const started = Date.now();
      const error = await new DirectGets(quick).get("SILENT", { last_by_subj: "s.t" }).catch((e: unknown) => e);
      expect(isTransient(error)).toBe(true);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(await new DirectGets(quick).get("DG", { last_by_subj: "dg.b" })).not.toBeNull();
    } finally {
      silent.unsubscribe();
      quick.close();
    }
  });

  it("fails every get still waiting when its inbox closes", async () => {
    const silent = nc.subscribe("$JS.API.DIRECT.GET.SILENT2.>", { callback: () => undefined });
    const closing = new InboxRequests(nc, 60_000);
    const pending = new DirectGets(closing).get("SILENT2", { last_by_subj: "s.t" }).catch((e: unknown) => e);
    closing.close();
    expect(isTransient(await pending)).toBe(true);
    silent.unsubscribe();
  });

  it("reports a server's other statuses as a DirectGetError naming the status", async () => {
    // A bad query (neither a sequence nor a subject) is refused with a 408 status.
    const error = await gets.get("DG", { next_by_subj: "", seq: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DirectGetError);
    expect((error as DirectGetError).status).toBeGreaterThanOrEqual(400);
  });
});

describe("a KV entry read by a direct get", () => {
  it("is what the KV client reads: a value with its revision, a delete or purge marker, or nothing", async () => {
    const kv = await new Kvm(nc).create("DG_KV", { history: 1, allow_direct: true });
    await kv.put("put", new TextEncoder().encode("v1"));
    await kv.put("put", new TextEncoder().encode("v2"));
    await kv.put("deleted", new TextEncoder().encode("x"));
    await kv.delete("deleted");
    await kv.put("purged", new TextEncoder().encode("y"));
    await kv.purge("purged");
    for (const key of ["put", "deleted", "purged"]) {
      const ours = await gets.kvEntry("DG_KV", key);
      const theirs = await kv.get(key);
      expect(ours).not.toBeNull();
      expect({ operation: ours!.operation, value: new TextDecoder().decode(ours!.value), revision: ours!.revision }).toEqual({
        operation: theirs!.operation,
        value: theirs!.string(),
        revision: theirs!.revision,
      });
    }
    expect((await gets.kvEntry("DG_KV", "put"))?.operation).toBe("PUT");
    expect((await gets.kvEntry("DG_KV", "deleted"))?.operation).toBe("DEL");
    expect((await gets.kvEntry("DG_KV", "purged"))?.operation).toBe("PURGE");
    expect(await gets.kvEntry("DG_KV", "never")).toBeNull();
  });
});

describe("the store's reads and key lookups", () => {
  it("make no nats.js request once the store is open", async () => {
    const own = await connect({ servers: server.url });
    const store = await JetStreamEventStore.open(own, { streamName: "DGS", subjectPrefix: "dgs", ephemeralPrefix: "dgse", partitionCount: 2 });
    const requested: string[] = [];
    const original = own.request.bind(own);
    own.request = (subject, ...rest) => {
      requested.push(subject);
      return original(subject, ...rest);
    };
    try {
      const first = await store.append("/dg/one", [{ type: "agents/context-added", payload: { role: "user", content: "hi" }, idempotencyKey: "k1" }]);
      // The same key again: looked up in the index, the original found by direct gets.
      const again = await store.append("/dg/one", [{ type: "agents/context-added", payload: { role: "user", content: "hi again" }, idempotencyKey: "k1" }]);
      expect(again).toEqual({ status: "duplicate", events: first.events });
      expect((await store.read("/dg/one")).map((e) => e.offset)).toEqual([1]);
      expect(requested.filter((s) => s.includes("DIRECT.GET"))).toEqual([]);
      // The lookup found the index's entry (as the KV client reads it), not "no entry".
      const kv = await new Kvm(own).open("DGS_KEYS");
      const keys: string[] = [];
      for await (const k of await kv.keys()) keys.push(k);
      expect(keys.filter((k) => k.startsWith("k.dg.one.")).length).toBe(1);
    } finally {
      await store.close();
      await own.close();
    }
  });
});
