// Signed records (signing.ts): with a trust, a store reads only records signed by a known
// service that emits every known type in them, and passes over the rest as it passes over
// messages that are not records: reads, subscriptions and the feed go on, and appends continue
// the offsets. A signed record cannot be moved to another subject or published again.

import { type KeyObject, generateKeyPairSync } from "node:crypto";
import { type EmittingService, SERVICE_EMITS } from "@agentrt/contract";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import type { FeedBatch } from "../src/event-store.ts";
import type { JetStreamEventStore } from "../src/jetstream/index.ts";
import { type RecordSigning, type RecordTrust, SIGNATURE_HEADER, SIGNER_HEADER, keyIdOf, signatureHeaders } from "../src/jetstream/signing.ts";
import { contents, note, storeFixture } from "./store-fixture.ts";

const names = { streamName: "EV_SIGNED", subjectPrefix: "evg", ephemeralPrefix: "ephg", partitionCount: 4 };
const SERVICES = Object.keys(SERVICE_EMITS) as EmittingService[];
const keys = new Map(SERVICES.map((service) => [service, generateKeyPairSync("ed25519")]));
const trust: RecordTrust = { keys: new Map(SERVICES.map((service) => [service, keys.get(service)!.publicKey])) };
const signerOf = (service: EmittingService) => ({ service, key: keys.get(service)!.privateKey as KeyObject });

const fixture = storeFixture(names);
const { subjectOf } = fixture;

/** What the driver writes of a turn: the model's reply (its key signs nothing else of context). */
const reply = (content: string) => ({ type: "agents/context-added", payload: { role: "assistant", content } });

const settled = { type: "agent/llm-request-settled", payload: { requestOffset: 1, result: { status: "succeeded", text: "forged" } } };

interface Refusal {
  readonly subject: string;
  readonly seq: number;
  readonly reason: string;
}

/** A store signing as `service` (when given) and reading under `readTrust`, with the refusals it reports. */
async function openStore(service: EmittingService | undefined, readTrust: RecordTrust | undefined = trust): Promise<{ store: JetStreamEventStore; refused: Refusal[] }> {
  const refused: Refusal[] = [];
  const signing: RecordSigning = {
    ...(service === undefined ? {} : { signer: signerOf(service) }),
    ...(readTrust === undefined ? {} : { trust: readTrust }),
    onUntrusted: (refusal) => refused.push(refusal),
  };
  return { store: await fixture.fx.openStore(undefined, { signing }), refused };
}

/** The stored message at the end of the stream's subject: its body and headers. */
async function lastMessage(path: string) {
  const jsm = await jetstreamManager(fixture.nc);
  const msg = await jsm.streams.getMessage(names.streamName, { last_by_subj: subjectOf(path) });
  return msg!;
}

/** Everything the reader sees of a stream: a read, a subscription from the start, the feed. */
async function everyWayRead(store: JetStreamEventStore, path: string, count: number): Promise<{ read: string[]; subscribed: string[]; fed: string[] }> {
  const read = contents(await store.read(path));
  const subscription = store.subscribe(path, { fromOffset: 1 });
  const subscribed: string[] = [];
  for await (const event of subscription) {
    subscribed.push(contents([event])[0]!);
    if (subscribed.length === count) break;
  }
  await subscription.close();
  const feed = store.feed({ partitions: [store.partitionOf(path)] });
  const fed: string[] = [];
  for await (const batch of feed as AsyncIterable<FeedBatch>) {
    if (batch.streamPath === path) fed.push(...contents(batch.events));
    if (fed.length === count) break;
  }
  await feed.close();
  return { read, subscribed, fed };
}

describe("signed records", () => {
  it("are read when their signer emits their types; a signed record of another service's type is passed over, and appends go on", async () => {
    // Given a stream written by the gateway and the driver, each signing as itself, and the gateway's key signing a model settlement
    const path = "/signed/forged-type";
    const gateway = await openStore("web-gateway");
    const driver = await openStore("llm-driver");
    await gateway.store.append(path, [note("user one")]);
    await driver.store.append(path, [reply("driver two")]);
    // (a compromised gateway: the store does not check ownership itself, ownedStore does, in the service)
    const forger = await openStore("web-gateway", undefined);
    await forger.store.append(path, [settled]);
    await gateway.store.append(path, [note("user three")]);
    // When a trusting reader reads it every way
    const reader = await openStore(undefined);
    const seen = await everyWayRead(reader.store, path, 3);
    // Then the settlement is passed over everywhere, named as such, and the offsets stay dense
    expect(seen).toEqual({ read: ["user one", "driver two", "user three"], subscribed: ["user one", "driver two", "user three"], fed: ["user one", "driver two", "user three"] });
    expect((await reader.store.read(path)).map((e) => e.offset)).toEqual([1, 2, 3]);
    expect(reader.refused.map((r) => r.reason)).toContain('web-gateway does not emit "agent/llm-request-settled"');
  }, 60_000);

  it("unsigned records, records of an unknown signer and records whose signature does not hold are passed over", async () => {
    const path = "/signed/unsigned";
    const gateway = await openStore("web-gateway");
    await gateway.store.append(path, [note("signed one")]);
    // An unsigned record, well formed, as a store without a signer writes it
    const unsigned = await openStore(undefined, undefined);
    await unsigned.store.append(path, [note("unsigned")]);
    // A record claiming a signer no one knows, and one whose body was changed after signing
    const original = await lastMessage(path);
    const js = jetstream(fixture.nc);
    const publishWith = async (body: Uint8Array, set: Record<string, string>) => {
      const h = natsHeaders();
      for (const [name, value] of Object.entries(set)) h.set(name, value);
      const last = await lastMessage(path);
      return await js.publish(subjectOf(path), body, { headers: h, expect: { lastSubjectSequence: last.seq } });
    };
    await gateway.store.append(path, [note("signed two")]);
    const signedTwo = await lastMessage(path);
    await publishWith(original.data, { [SIGNER_HEADER]: "someone-else", [SIGNATURE_HEADER]: signedTwo.header.get(SIGNATURE_HEADER) });
    const tampered = new TextDecoder().decode(signedTwo.data).replace("signed two", "tampered!!");
    await publishWith(new TextEncoder().encode(tampered), { [SIGNER_HEADER]: "web-gateway", [SIGNATURE_HEADER]: signedTwo.header.get(SIGNATURE_HEADER) });
    await gateway.store.append(path, [note("signed three")]);
    // Then a trusting reader reads only the signed records, and says why it passed over the rest
    const reader = await openStore(undefined);
    expect(contents(await reader.store.read(path))).toEqual(["signed one", "signed two", "signed three"]);
    expect(reader.refused.map((r) => r.reason).sort()).toEqual(['its signer "someone-else" is not a known service', "it is not signed", "its signature as web-gateway does not hold"].sort());
  }, 60_000);

  it("cannot be published again on their own subject, nor moved to another agent's", async () => {
    const path = "/signed/replayed";
    const other = "/signed/other";
    const driver = await openStore("llm-driver");
    await driver.store.append(path, [reply("one")]);
    await driver.store.append(path, [reply("two")]);
    await driver.store.append(other, [reply("other one")]);
    const first = (await jetstreamManager(fixture.nc).then((jsm) => jsm.direct.getMessage(names.streamName, { seq: 1, next_by_subj: subjectOf(path) })))!;
    const js = jetstream(fixture.nc);
    const copyHeaders = (keep: (name: string) => boolean) => {
      const h = natsHeaders();
      for (const name of first.header.keys()) if (keep(name)) h.set(name, first.header.get(name));
      return h;
    };
    // Published again as it was stored (its expected sequence included): JetStream refuses it
    await expect(js.publish(subjectOf(path), first.data, { headers: copyHeaders((name) => !name.startsWith("Nats-") || name === "Nats-Expected-Last-Subject-Sequence") })).rejects.toThrow(/wrong last sequence/);
    // Without its expected sequence, or moved to the other agent's subject: stored, and passed over
    await js.publish(subjectOf(path), first.data, { headers: copyHeaders((name) => !name.startsWith("Nats-")) });
    const otherLast = await jetstreamManager(fixture.nc).then((jsm) => jsm.streams.getMessage(names.streamName, { last_by_subj: subjectOf(other) }));
    await js.publish(subjectOf(other), first.data, { headers: copyHeaders((name) => !name.startsWith("Nats-")), expect: { lastSubjectSequence: otherLast!.seq } });
    const reader = await openStore(undefined);
    expect(contents(await reader.store.read(path))).toEqual(["one", "two"]);
    expect(contents(await reader.store.read(other))).toEqual(["other one"]);
    // (the moved copy names the first agent's path, so it is not even a record of the other's; its signature, over the subject, would not hold either)
    expect(reader.refused.map((r) => r.reason)).toEqual(["it names no sequence it followed"]);
    // And the next append continues each stream's offsets
    expect((await driver.store.append(path, [reply("three")])).events[0]!.offset).toBe(3);
    expect((await driver.store.append(other, [reply("other two")])).events[0]!.offset).toBe(2);
  }, 60_000);

  it("unsigned records stored before the trust's cut-off are read: they were written before signing was on", async () => {
    const path = "/signed/before";
    const unsigned = await openStore(undefined, undefined);
    await unsigned.store.append(path, [note("before")]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const cutOff = new Date();
    await unsigned.store.append(path, [note("after, unsigned")]);
    const withCutOff = { ...trust, unsignedBefore: cutOff };
    const gateway = await openStore("web-gateway", withCutOff);
    await gateway.store.append(path, [note("after, signed")]);
    const reader = await openStore(undefined, withCutOff);
    expect((await reader.store.read(path)).map((e) => e.offset)).toEqual([1, 2]);
    // (every way of reading takes the server's stamp: gets carry it as a header, consumer deliveries in their reply subject)
    expect(await everyWayRead(reader.store, path, 2)).toEqual({ read: ["before", "after, signed"], subscribed: ["before", "after, signed"], fed: ["before", "after, signed"] });
    // (the feed also brings the partition's other streams: only this one's refusals count here)
    expect(reader.refused.filter((r) => r.subject === subjectOf(path)).map((r) => r.reason)).toEqual(["it is not signed"]);
  }, 60_000);

  it("published again behind a decoy of the expected sequence's header (nats-server 2.9 checks the decoy): passed over, and the next append is read", async () => {
    const path = "/signed/decoy";
    const driver = await openStore("llm-driver");
    await driver.store.append(path, [reply("one")]);
    await driver.store.append(path, [reply("two")]);
    const jsm = await jetstreamManager(fixture.nc);
    const first = (await jsm.direct.getMessage(names.streamName, { seq: 1, next_by_subj: subjectOf(path) }))!;
    const h = natsHeaders();
    h.set("X-Nats-Expected-Last-Subject-Sequence", "decoy");
    for (const name of first.header.keys()) if (!name.startsWith("Nats-") || name === "Nats-Expected-Last-Subject-Sequence") h.set(name, first.header.get(name));
    // (the server stores it: it did not see the real expectation)
    await jetstream(fixture.nc).publish(subjectOf(path), first.data, { headers: h });
    const reader = await openStore(undefined);
    expect(contents(await reader.store.read(path))).toEqual(["one", "two"]);
    expect(reader.refused.map((r) => r.reason)).toEqual(["its headers name the expected sequence elsewhere too"]);
    expect((await (await openStore("llm-driver")).store.append(path, [reply("three")])).events[0]!.offset).toBe(3);
    expect(contents(await (await openStore(undefined)).store.read(path))).toEqual(["one", "two", "three"]);
  }, 60_000);

  it("an unsigned record carrying its own Nats-Time-Stamp does not pass for one stored before the cut-off", async () => {
    const path = "/signed/own-stamp";
    const withCutOff = { ...trust, unsignedBefore: new Date(Date.now() - 60_000) };
    const gateway = await openStore("web-gateway", withCutOff);
    await gateway.store.append(path, [note("one")]);
    const last = await lastMessage(path);
    const h = natsHeaders();
    h.set("Nats-Time-Stamp", "2000-01-01T00:00:00Z");
    const body = `{"v":1,"first":2,"n":1,"at":"2026-01-01T00:00:00.000Z","path":"${path}","events":[${JSON.stringify(settled)}]}`;
    await jetstream(fixture.nc).publish(subjectOf(path), new TextEncoder().encode(body), { headers: h, expect: { lastSubjectSequence: last.seq } });
    const reader = await openStore(undefined, withCutOff);
    expect(await everyWayRead(reader.store, path, 1)).toEqual({ read: ["one"], subscribed: ["one"], fed: ["one"] });
    expect(reader.refused.filter((r) => r.subject === subjectOf(path)).map((r) => r.reason)).toEqual(["it is not signed"]);
  }, 60_000);

  for (const [what, events, count] of [
    ["a count of a million over one event", '[{"type":"agents/context-added","payload":{"role":"user","content":"two"}}]', 1_000_000],
    ["a null event", "[null]", 1],
  ] as const) {
    it(`signed by the gateway with ${what}: passed over, and the offsets go on`, async () => {
      const path = `/signed/${what.replaceAll(/[^a-z]+/g, "-")}`;
      const gateway = await openStore("web-gateway");
      await gateway.store.append(path, [note("one")]);
      const last = await lastMessage(path);
      const body = new TextEncoder().encode(`{"v":1,"first":2,"n":${count},"at":"2026-01-01T00:00:00.000Z","path":"${path}","events":${events}}`);
      const h = natsHeaders();
      for (const [name, value] of signatureHeaders(signerOf("web-gateway"), subjectOf(path), last.seq, body)) h.set(name, value);
      await jetstream(fixture.nc).publish(subjectOf(path), body, { headers: h, expect: { lastSubjectSequence: last.seq } });
      const driver = await openStore("llm-driver");
      expect((await driver.store.append(path, [reply("three")])).events[0]!.offset).toBe(2);
      const reader = await openStore(undefined);
      expect(await everyWayRead(reader.store, path, 2)).toEqual({ read: ["one", "three"], subscribed: ["one", "three"], fed: ["one", "three"] });
    }, 60_000);
  }

  it("a store's own records are not checked again when read back (their acknowledgement is proof enough)", async () => {
    // Given a store whose trust holds another key for the gateway than the one it signs with
    const path = "/signed/own";
    const otherGatewayKey = generateKeyPairSync("ed25519").publicKey;
    const mismatched = { keys: new Map([...trust.keys, ["web-gateway", otherGatewayKey] as const]) };
    const gateway = await openStore("web-gateway", mismatched);
    // When it appends and reads back
    await gateway.store.append(path, [note("own")]);
    // Then it reads its own record without checking it, and a store with the same trust refuses it
    expect(contents(await gateway.store.read(path))).toEqual(["own"]);
    expect(gateway.refused).toEqual([]);
    const other = await openStore(undefined, mismatched);
    expect(await other.store.read(path)).toEqual([]);
    expect(other.refused.map((r) => r.reason)).toEqual([`its key "${keyIdOf(keys.get("web-gateway")!.publicKey)}" is not one of web-gateway's keys`]);
  }, 60_000);

  it("given a driver key rotated mid-stream (new key trusted first, then signing, the old one kept), when read every way, then both keys' records are read, and a reader that dropped the old key passes its records over", async () => {
    const path = "/signed/rotated";
    const next = generateKeyPairSync("ed25519");
    // Given records signed with the driver's first key
    const before = await openStore("llm-driver");
    await before.store.append(path, [reply("old key")]);
    // When the driver signs with its next key, every reader trusting the first as retired
    const rotated: RecordTrust = { keys: new Map([...trust.keys, ["llm-driver", next.publicKey] as const]), retired: new Map([["llm-driver", [keys.get("llm-driver")!.publicKey]]]) };
    const refused: Refusal[] = [];
    const after = await fixture.fx.openStore(undefined, { signing: { signer: { service: "llm-driver", key: next.privateKey }, trust: rotated, onUntrusted: (r) => refused.push(r) } });
    await after.append(path, [reply("new key")]);
    // Then a reader under the rotated trust reads both, every way
    const reader = await openStore(undefined, rotated);
    expect(await everyWayRead(reader.store, path, 2)).toEqual({ read: ["old key", "new key"], subscribed: ["old key", "new key"], fed: ["old key", "new key"] });
    expect(reader.refused.filter((r) => r.subject === subjectOf(path))).toEqual([]);
    expect(refused.filter((r) => r.subject === subjectOf(path))).toEqual([]);
    // And a reader that no longer trusts the first key passes over what it signed, naming the key
    const forgetful = await openStore(undefined, { keys: rotated.keys });
    expect(contents(await forgetful.store.read(path))).not.toContain("old key");
    expect(forgetful.refused.map((r) => r.reason)).toEqual([`its key "${keyIdOf(keys.get("llm-driver")!.publicKey)}" is not one of llm-driver's keys`]);
  }, 60_000);

  it("given the old key retired at an instant, when a leaked copy of it signs a record after, then every way of reading passes that one over and reads what it signed before", async () => {
    const path = "/signed/retired";
    const next = generateKeyPairSync("ed25519");
    const old = keys.get("llm-driver")!.publicKey;
    const leaked = await openStore("llm-driver"); // the old private key, as one who kept a copy would
    await leaked.store.append(path, [reply("signed before the retirement")]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const retiredAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await leaked.store.append(path, [reply("signed with the leaked key")]);
    const held: RecordTrust = {
      keys: new Map([...trust.keys, ["llm-driver", next.publicKey] as const]),
      retired: new Map([["llm-driver", [old]]]),
      retiredAtMs: new Map([[keyIdOf(old), retiredAt]]),
    };
    const driver = await fixture.fx.openStore(undefined, { signing: { signer: { service: "llm-driver", key: next.privateKey }, trust: held } });
    await driver.append(path, [reply("signed with the new key")]);
    const reader = await openStore(undefined, held);
    const expected = ["signed before the retirement", "signed with the new key"];
    expect(await everyWayRead(reader.store, path, 2)).toEqual({ read: expected, subscribed: expected, fed: expected });
    expect(new Set(reader.refused.filter((r) => r.subject === subjectOf(path)).map((r) => r.reason.replace(/stored at \S+$/, "stored at …")))).toEqual(
      new Set([`its key ${keyIdOf(old)} was retired at ${new Date(retiredAt).toISOString()} and it was stored at …`]),
    );
  }, 60_000);
});
