// What a signature binds (signing.ts): the subject, the sequence the publish expected to follow
// and the body; and what a signer may carry: the known types its service emits.

import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { recordJson } from "../src/batch.ts";
import { RecordReader, decodeStored } from "../src/jetstream/records.ts";
import { KEY_ID_HEADER, type RecordTrust, keyIdOf, signatureHeaders, untrustedBecause } from "../src/jetstream/signing.ts";

const driver = generateKeyPairSync("ed25519");
const gateway = generateKeyPairSync("ed25519");
const trust: RecordTrust = {
  keys: new Map([
    ["llm-driver", driver.publicKey],
    ["web-gateway", gateway.publicKey],
  ]),
};
const SUBJECT = "ev.3.agents.one";
const body = (...types: string[]) => new TextEncoder().encode(recordJson("/agents/one", 5, types.length, "2026-12-07T00:00:00.000Z", types.map((type) => JSON.stringify({ type, payload: {} })).join(",")));

/** The headers a stored message carries: the signature's, and the expectation JetStream kept. */
function stored(service: "llm-driver" | "web-gateway", subject: string, expected: number, data: Uint8Array, signedSubject = subject, signedExpected = expected) {
  const key = service === "llm-driver" ? driver.privateKey : gateway.privateKey;
  const headers = new Map<string, string>(signatureHeaders({ service, key }, signedSubject, signedExpected, data));
  headers.set("Nats-Expected-Last-Subject-Sequence", String(expected));
  return { subject, data, headers: asHeaders(headers) };
}

/** Headers as readers see them (one value per name here). */
function asHeaders(map: Map<string, string>) {
  return { get: (name: string) => map.get(name) ?? "", keys: () => [...map.keys()], values: (name: string) => (map.has(name) ? [map.get(name)!] : []) };
}

describe("a record's signature", () => {
  it("holds for its subject, its expected sequence and its body", () => {
    expect(untrustedBecause(trust, stored("llm-driver", SUBJECT, 41, body("agent/llm-request-settled")))).toBeUndefined();
  });

  it("does not hold on another subject, after another sequence, or over a changed body", () => {
    const data = body("agent/llm-request-settled");
    expect(untrustedBecause(trust, stored("llm-driver", "ev.3.agents.two", 41, data, SUBJECT))).toBe("its signature as llm-driver does not hold");
    expect(untrustedBecause(trust, stored("llm-driver", SUBJECT, 42, data, SUBJECT, 41))).toBe("its signature as llm-driver does not hold");
    const signed = stored("llm-driver", SUBJECT, 41, data);
    const changed = new Uint8Array(data);
    changed[changed.length - 5] = 0x41;
    expect(untrustedBecause(trust, { ...signed, data: changed })).toBe("its signature as llm-driver does not hold");
  });

  it("does not let a service carry a known type another service owns; a type this version does not know passes (readers skip it)", () => {
    expect(untrustedBecause(trust, stored("web-gateway", SUBJECT, 41, body("agents/context-added", "agent/llm-request-settled")))).toBe('web-gateway does not emit "agent/llm-request-settled"');
    expect(untrustedBecause(trust, stored("web-gateway", SUBJECT, 41, body("agents/context-added", "agent/from-a-newer-version")))).toBeUndefined();
  });

  it("does not hold when the expected sequence's name shows anywhere else in the headers (nats-server 2.9 would check the decoy, and store an old record again)", () => {
    const signed = stored("llm-driver", SUBJECT, 41, body("agent/llm-request-settled"));
    const headers = new Map([...(signed.headers.keys().map((k) => [k, signed.headers.get(k)]) as [string, string][])]);
    expect(untrustedBecause(trust, { ...signed, headers: asHeaders(new Map([["X-Nats-Expected-Last-Subject-Sequence", "x"], ...headers])) })).toBe("its headers name the expected sequence elsewhere too");
    expect(untrustedBecause(trust, { ...signed, headers: asHeaders(new Map([["X-Note", "nats-expected-last-subject-sequence: 7"], ...headers])) })).toBe("its headers name the expected sequence elsewhere too");
    expect(untrustedBecause(trust, { ...signed, headers: { get: signed.headers.get } })).toBe("its headers name the expected sequence elsewhere too");
    expect(untrustedBecause(trust, signed)).toBeUndefined();
  });

  it("does not hold for a record whose count is not its events', or one with an event that is not an object", () => {
    const data = (text: string) => new TextEncoder().encode(text);
    const miscounted = data('{"v":1,"first":2,"n":1000000,"at":"2026-12-07T00:00:00.000Z","path":"/agents/one","events":[{"type":"agents/context-added","payload":{}}]}');
    expect(untrustedBecause(trust, stored("web-gateway", SUBJECT, 41, miscounted))).toBe("it counts 1000000 events and holds 1");
    const nullEvent = data('{"v":1,"first":2,"n":1,"at":"2026-12-07T00:00:00.000Z","path":"/agents/one","events":[null]}');
    expect(untrustedBecause(trust, stored("web-gateway", SUBJECT, 41, nullEvent))).toBe("events[0] is not an object");
  });

  it("is required after the trust's cut-off, by the server's stamp", () => {
    const unsigned = { subject: SUBJECT, data: body("agents/context-added"), headers: asHeaders(new Map([["Nats-Time-Stamp", "2000-01-01T00:00:00Z"]])) };
    const cutOff = { ...trust, unsignedBefore: new Date("2026-12-07T00:00:00.000Z") };
    expect(untrustedBecause(cutOff, { ...unsigned, storedAtMs: () => Date.parse("2026-12-06T23:59:59.999Z") })).toBeUndefined();
    expect(untrustedBecause(cutOff, { ...unsigned, storedAtMs: () => Date.parse("2026-12-07T00:00:00.000Z") })).toBe("it is not signed");
    expect(untrustedBecause(trust, { ...unsigned, storedAtMs: () => 0 })).toBe("it is not signed");
    // A stamp the publisher stored is not the server's: without one from the read path, it must be signed
    expect(untrustedBecause(cutOff, unsigned)).toBe("it is not signed");
  });
});

describe("a reader with a trust", () => {
  const readerOf = (signing: ConstructorParameters<typeof RecordReader>[7]) => new RecordReader({} as never, {} as never, "EVENTS", false, undefined, undefined, undefined, signing);

  it("keeps the body the signature's check parsed, so reading the record parses it no more", () => {
    const msg = stored("llm-driver", SUBJECT, 41, body("agent/llm-request-settled"));
    const record = readerOf({ trust }).recordOf({ seq: 42, subject: msg.subject, data: msg.data, header: msg.headers });
    expect(record?.body?.events).toEqual([{ type: "agent/llm-request-settled", payload: {} }]);
    expect(decodeStored(record!)).toBe(record?.body);
  });

  it("parses nothing but the head of a record it takes unchecked", () => {
    const msg = stored("llm-driver", SUBJECT, 41, body("agent/llm-request-settled"));
    const record = readerOf({}).recordOf({ seq: 42, subject: msg.subject, data: msg.data, header: msg.headers });
    expect(record).toMatchObject({ seq: 42, first: 5, count: 1 });
    expect(record?.body).toBeUndefined();
  });
});

describe("a rotated key", () => {
  const next = generateKeyPairSync("ed25519");
  /** The driver signs with its next key now; the one before is retired. */
  const rotated: RecordTrust = { keys: new Map([...trust.keys, ["llm-driver", next.publicKey]]), retired: new Map([["llm-driver", [driver.publicKey]]]) };
  const signedWith = (key: typeof driver.privateKey, options: { keyId?: string | null } = {}) => {
    const data = body("agent/llm-request-settled");
    const headers = new Map<string, string>(signatureHeaders({ service: "llm-driver", key }, SUBJECT, 41, data));
    if (options.keyId === null) headers.delete(KEY_ID_HEADER);
    else if (options.keyId !== undefined) headers.set(KEY_ID_HEADER, options.keyId);
    headers.set("Nats-Expected-Last-Subject-Sequence", "41");
    return { subject: SUBJECT, data, headers: asHeaders(headers) };
  };

  it("given a record signed with the key it names, when read, then it is checked against that key", () => {
    expect(signedWith(next.privateKey).headers.get(KEY_ID_HEADER)).toBe(keyIdOf(next.publicKey));
    expect(keyIdOf(next.privateKey)).toBe(keyIdOf(next.publicKey));
    expect(untrustedBecause(rotated, signedWith(next.privateKey))).toBeUndefined();
  });

  it("given records signed with the retired key, with and without the key header (written before it), when read, then they hold", () => {
    expect(untrustedBecause(rotated, signedWith(driver.privateKey))).toBeUndefined();
    expect(untrustedBecause(rotated, signedWith(driver.privateKey, { keyId: null }))).toBeUndefined();
    expect(untrustedBecause(rotated, signedWith(next.privateKey, { keyId: null }))).toBeUndefined();
  });

  it("given a retired key no longer trusted, or a key id that is none of the service's, when read, then the record is passed over", () => {
    const forgotten: RecordTrust = { keys: rotated.keys };
    expect(untrustedBecause(forgotten, signedWith(driver.privateKey))).toBe(`its key "${keyIdOf(driver.publicKey)}" is not one of llm-driver's keys`);
    expect(untrustedBecause(forgotten, signedWith(driver.privateKey, { keyId: null }))).toBe("its signature as llm-driver does not hold");
    const stranger = generateKeyPairSync("ed25519");
    expect(untrustedBecause(rotated, signedWith(stranger.privateKey))).toBe(`its key "${keyIdOf(stranger.publicKey)}" is not one of llm-driver's keys`);
    // Naming a trusted key does not make another key's signature hold
    expect(untrustedBecause(rotated, signedWith(stranger.privateKey, { keyId: keyIdOf(next.publicKey) }))).toBe("its signature as llm-driver does not hold");
  });

  it("given the retired key's retirement instant, when its records are read, then those stored before it hold and those stored since (a leaked key) are passed over", () => {
    const retiredAt = Date.parse("2026-12-07T10:00:00Z");
    const held: RecordTrust = { ...rotated, retiredAtMs: new Map([[keyIdOf(driver.publicKey), retiredAt]]) };
    const at = (ms: number | undefined, options: { keyId?: string | null } = {}) => ({ ...signedWith(driver.privateKey, options), storedAtMs: () => ms });
    expect(untrustedBecause(held, at(retiredAt - 1))).toBeUndefined();
    expect(untrustedBecause(held, at(retiredAt - 1, { keyId: null }))).toBeUndefined();
    expect(untrustedBecause(held, at(retiredAt))).toBe(`its key ${keyIdOf(driver.publicKey)} was retired at 2026-12-07T10:00:00.000Z and it was stored at 2026-12-07T10:00:00.000Z`);
    // Without the key header the signature still finds the key, and the instant still holds.
    expect(untrustedBecause(held, at(retiredAt + 60_000, { keyId: null }))).toBe(`its key ${keyIdOf(driver.publicKey)} was retired at 2026-12-07T10:00:00.000Z and it was stored at 2026-12-07T10:01:00.000Z`);
    // A read that cannot date the record cannot show it came before.
    expect(untrustedBecause(held, at(undefined))).toBe(`its key ${keyIdOf(driver.publicKey)} was retired at 2026-12-07T10:00:00.000Z and the read does not say when it was stored`);
    // The key signing now has no instant and is read whenever stored.
    expect(untrustedBecause(held, { ...signedWith(next.privateKey), storedAtMs: () => retiredAt + 60_000 })).toBeUndefined();
  });
});
