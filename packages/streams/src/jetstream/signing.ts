// Signed records. Every service's NATS user may publish on the events' subjects (a service
// appends to any agent), so NATS cannot tell the gateway's records from the driver's: a
// compromised gateway could publish a model settlement whose script the reducer would then run.
// With signing on, each service signs the records it publishes with its own Ed25519 key, and
// every reader passes over a record that is not signed by a known service, whose signature does
// not hold, or that carries an event its service may not write (contract `signedEventRefusal`:
// a type another service owns, model output, or from the gateway what no API caller may append).
//
// What is signed: the subject, the sequence the publish expected to follow
// (`Nats-Expected-Last-Subject-Sequence`, which JetStream enforces and stores with the
// message), and the body. So a signed record cannot be moved to another agent's subject, nor
// published again later on its own: its expected sequence is no longer the subject's last.

import { type KeyObject, createHash, createPublicKey, sign, verify } from "node:crypto";
import { type EmittingService, signedEventRefusal } from "@agentrt/contract";
import { type BatchRecord, decodeRecordJson } from "../batch.ts";

/** Header naming the service that signed a record. */
export const SIGNER_HEADER = "Agentrt-Signer";
/** Header carrying the record's Ed25519 signature, base64. */
export const SIGNATURE_HEADER = "Agentrt-Signature";
/**
 * Header naming the key that signed it (`keyIdOf`), so a reader checks it against that key alone
 * when a service has more than one (rotated keys). Not signed: naming another key only makes the
 * signature fail. Records from before it are checked against each of the signer's keys.
 */
export const KEY_ID_HEADER = "Agentrt-Key";
const EXPECTED_LAST_HEADER = "Nats-Expected-Last-Subject-Sequence";

/** The key a service signs its records with. */
export interface RecordSigner {
  readonly service: EmittingService;
  readonly key: KeyObject;
}

/** Whose records a reader accepts. */
export interface RecordTrust {
  /** Each service's public key: the one its private key signs with now. */
  readonly keys: ReadonlyMap<EmittingService, KeyObject>;
  /**
   * Each service's earlier public keys, after a rotation: records they signed stay readable (a
   * stored record is never signed again). Also where a new key goes first, so that every reader
   * trusts it before any writer signs with it.
   */
  readonly retired?: ReadonlyMap<EmittingService, readonly KeyObject[]>;
  /**
   * When an earlier key was retired (epoch ms, by the server's clock), by its id (`keyIdOf`): a
   * record it signed is read only if stored before then, so a leaked old key signs nothing new.
   * A key with no instant here is trusted whenever its record was stored.
   */
  readonly retiredAtMs?: ReadonlyMap<string, number>;
  /**
   * Unsigned records stored (by the server's clock) before this instant are read as before: they
   * were written before signing was turned on. Undefined: every record must be signed.
   */
  readonly unsignedBefore?: Date;
}

export interface RecordSigning {
  /** Signs what this store publishes; without it, records go out unsigned. */
  readonly signer?: RecordSigner;
  /** Checks what this store reads; without it, every readable record is taken. */
  readonly trust?: RecordTrust;
  /** Told of each record the trust refuses, once per record and reader (a service logs and counts it). */
  readonly onUntrusted?: (refused: { readonly subject: string; readonly seq: number; readonly reason: string }) => void;
}

/** A stored message as far as its signature is concerned. */
export interface SignedMessage {
  readonly subject: string;
  readonly data: Uint8Array;
  /** The message's headers (a direct get's `header`, a consumer message's `headers`). */
  readonly headers: StoredHeaders | undefined;
  /**
   * When the server stored it, in ms, as the read path reports it (asked only of unsigned ones
   * and of those signed with a retired key).
   * Never a header's first value: a publisher may store its own `Nats-Time-Stamp`.
   */
  readonly storedAtMs?: () => number | undefined;
  /** The body parsed, when the reader keeps what was parsed for reading it (without it, parsed here). */
  readonly body?: () => BatchRecord | undefined;
}

/** What readers see of a message's headers (nats.js's MsgHdrs). */
export interface StoredHeaders {
  get(name: string): string;
  keys?(): string[];
  values?(name: string): string[];
  readonly description?: string;
}

const encoder = new TextEncoder();

function signedBytes(subject: string, expectedLastSequence: number, body: Uint8Array): Buffer {
  return Buffer.concat([encoder.encode(`${subject}\n${expectedLastSequence}\n`), body]);
}

const keyIds = new WeakMap<KeyObject, string>();

/** A key's id: the first 16 hex digits of the SHA-256 of its public half (SPKI, DER). */
export function keyIdOf(key: KeyObject): string {
  let id = keyIds.get(key);
  if (id === undefined) {
    const spki = (key.type === "private" ? createPublicKey(key) : key).export({ type: "spki", format: "der" });
    id = createHash("sha256").update(spki).digest("hex").slice(0, 16);
    keyIds.set(key, id);
  }
  return id;
}

/** The headers that sign a record published on `subject` after `expectedLastSequence`. */
export function signatureHeaders(signer: RecordSigner, subject: string, expectedLastSequence: number, body: Uint8Array): [string, string][] {
  const signature = sign(null, signedBytes(subject, expectedLastSequence, body), signer.key).toString("base64");
  return [
    [SIGNER_HEADER, signer.service],
    [KEY_ID_HEADER, keyIdOf(signer.key)],
    [SIGNATURE_HEADER, signature],
  ];
}

/** The keys a record of `service` may be checked against: the one its header names, or each of the service's. */
function keysToCheck(trust: RecordTrust, service: EmittingService, current: KeyObject, keyId: string): readonly KeyObject[] {
  const retired = trust.retired?.get(service) ?? [];
  if (keyId === "") return retired.length === 0 ? [current] : [current, ...retired];
  if (keyIdOf(current) === keyId) return [current];
  return retired.filter((key) => keyIdOf(key) === keyId);
}

/** The key among `keys` the signature holds for, or undefined. */
function keySignatureHoldsFor(bytes: Buffer, keys: readonly KeyObject[], signature: string): KeyObject | undefined {
  const raw = Buffer.from(signature, "base64");
  for (const key of keys) {
    try {
      if (verify(null, bytes, key, raw)) return key;
    } catch {
      // a malformed signature holds for no key
    }
  }
  return undefined;
}

/** Why a record signed with `key` may not be read for when it was stored, or undefined. */
function retiredKeyRefusal(trust: RecordTrust, key: KeyObject, msg: SignedMessage): string | undefined {
  if (trust.retiredAtMs === undefined || trust.retiredAtMs.size === 0) return undefined;
  const id = keyIdOf(key);
  const retiredAt = trust.retiredAtMs.get(id);
  if (retiredAt === undefined) return undefined;
  const storedAt = msg.storedAtMs?.();
  if (storedAt === undefined) return `its key ${id} was retired at ${new Date(retiredAt).toISOString()} and the read does not say when it was stored`;
  if (storedAt >= retiredAt) return `its key ${id} was retired at ${new Date(retiredAt).toISOString()} and it was stored at ${new Date(storedAt).toISOString()}`;
  return undefined;
}

/**
 * Why a record may not be read under `trust`, or undefined when it may. What a signer's events
 * may be is the contract's `signedEventRefusal`: the known types its service emits, model output
 * only from the services that write it, and from the gateway only what an API caller may append.
 */
export function untrustedBecause(trust: RecordTrust, msg: SignedMessage): string | undefined {
  const signer = msg.headers?.get(SIGNER_HEADER) ?? "";
  const signature = msg.headers?.get(SIGNATURE_HEADER) ?? "";
  if (signer === "" && signature === "") {
    const storedAt = msg.storedAtMs?.();
    if (trust.unsignedBefore !== undefined && storedAt !== undefined && storedAt < trust.unsignedBefore.getTime()) return undefined;
    return "it is not signed";
  }
  const current = trust.keys.get(signer as EmittingService);
  if (current === undefined) return `its signer "${signer.slice(0, 64)}" is not a known service`;
  const expected = msg.headers?.get(EXPECTED_LAST_HEADER) ?? "";
  if (!/^\d+$/.test(expected)) return "it names no sequence it followed";
  if (!expectationStandsAlone(msg.headers)) return "its headers name the expected sequence elsewhere too";
  const keyId = msg.headers?.get(KEY_ID_HEADER) ?? "";
  const keys = keysToCheck(trust, signer as EmittingService, current, keyId);
  if (keys.length === 0) return `its key "${keyId.slice(0, 64)}" is not one of ${signer}'s keys`;
  const key = keySignatureHoldsFor(signedBytes(msg.subject, Number(expected), msg.data), keys, signature);
  if (key === undefined) return `its signature as ${signer} does not hold`;
  const retired = retiredKeyRefusal(trust, key, msg);
  if (retired !== undefined) return retired;
  const record = msg.body === undefined ? decodeRecordJson(msg.data) : msg.body();
  if (record === undefined) return "it is not a record";
  if (record.events.length !== record.n) return `it counts ${String(record.n).slice(0, 20)} events and holds ${record.events.length}`;
  const events = record.events as readonly unknown[];
  for (let i = 0; i < events.length; i++) {
    const refusal = signedEventRefusal(signer as EmittingService, events[i], `events[${i}]`);
    if (refusal !== undefined) return refusal;
  }
  return undefined;
}

/**
 * Whether the expected sequence is one header of its own, its name nowhere else. nats-server 2.9
 * looks for the expectation at the first place its name appears in the header block: a decoy
 * before it (`X-Nats-Expected-Last-Subject-Sequence: x`) made the server store a copy of an old
 * signed record without checking the sequence, while readers read the real header and the
 * signature held.
 */
function expectationStandsAlone(headers: StoredHeaders | undefined): boolean {
  if (headers?.keys === undefined || headers.values === undefined) return false;
  const name = EXPECTED_LAST_HEADER.toLowerCase();
  if ((headers.description ?? "").toLowerCase().includes(name)) return false;
  let found = 0;
  for (const key of headers.keys()) {
    for (const value of headers.values(key)) {
      if (key === EXPECTED_LAST_HEADER) found++;
      else if (key.toLowerCase().includes(name)) return false;
      if (value.toLowerCase().includes(name)) return false;
    }
  }
  return found === 1;
}
