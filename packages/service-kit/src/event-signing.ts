// The keys the services sign their records with (streams' signing.ts), from one directory,
// EVENT_KEYS_DIR:
//   <service>.key      the service's own Ed25519 private key, PEM (PKCS#8); only the services that
//                      run in the process need theirs (the reducer with an in-process driver: both)
//   <service>.pub      each of the four services' public key, PEM: a public key or a certificate
//   <service>.<name>.pub  optional, any number: another public key of the service, trusted too.
//                      After a rotation, the old key (its records stay readable); before one,
//                      the new key (so every reader trusts it before any writer signs with it)
//   <service>.<name>.retired  optional, beside a <service>.<name>.pub: an ISO time; records that
//                      key signed are read only if stored before it (a leaked old key signs
//                      nothing that is read)
//   unsigned-before    optional: an ISO time; unsigned records stored before it stay readable
// `writeEventKeys` makes such a directory (the quickstart's, and tests'); the chart mounts one
// per service from a Secret. Without EVENT_KEYS_DIR nothing is signed or checked.

import { type KeyObject, X509Certificate, createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type EmittingService, SERVICE_EMITS } from "@agentrt/contract";
import { keyIdOf, type RecordSigning } from "@agentrt/streams/jetstream";
import type { Logger } from "./logger.ts";
import type { Metrics } from "./metrics.ts";

/** The services whose records are signed, each with its key pair. */
export const SIGNING_SERVICES = Object.keys(SERVICE_EMITS) as EmittingService[];

export const UNSIGNED_BEFORE_FILE = "unsigned-before";

export class EventKeysError extends Error {
  constructor(message: string) {
    super(`EVENT_KEYS_DIR: ${message}`);
    this.name = "EventKeysError";
  }
}

function readPem(dir: string, file: string, what: string): string {
  const path = join(dir, file);
  if (!existsSync(path)) throw new EventKeysError(`${path} is missing: ${what}`);
  return readFileSync(path, "utf8");
}

function publicKeyOf(pem: string, path: string): KeyObject {
  // createPublicKey takes a private key too (deriving its public half): a .key copied where a
  // public key goes would be trusted silently, and shared wherever the public keys are.
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) {
    throw new EventKeysError(`${path} holds a private key; a .pub file holds only a public key or a certificate (keep private keys out of where public keys are shared)`);
  }
  try {
    const key = pem.includes("BEGIN CERTIFICATE") ? new X509Certificate(pem).publicKey : createPublicKey(pem);
    if (key.asymmetricKeyType !== "ed25519") throw new Error(`an ${key.asymmetricKeyType ?? "unknown"} key`);
    return key;
  } catch (error) {
    throw new EventKeysError(`${path} is not an Ed25519 public key or certificate in PEM (${(error as Error).message})`);
  }
}

/**
 * What `service` signs with and whose records it reads, from `dir`. Throws an EventKeysError
 * naming the file and what is wrong with it: a service must not start half-trusting.
 */
export function loadEventSigning(dir: string, service: EmittingService): Required<Pick<RecordSigning, "signer" | "trust">> {
  const keys = new Map<EmittingService, KeyObject>();
  for (const other of SIGNING_SERVICES) {
    const file = `${other}.pub`;
    keys.set(other, publicKeyOf(readPem(dir, file, `every service's public key is needed to read its records (${other})`), join(dir, file)));
  }
  const keyFile = `${service}.key`;
  let key: KeyObject;
  try {
    key = createPrivateKey(readPem(dir, keyFile, `${service} signs its records with it`));
  } catch (error) {
    if (error instanceof EventKeysError) throw error;
    throw new EventKeysError(`${join(dir, keyFile)} is not a private key in PEM (${(error as Error).message})`);
  }
  if (key.asymmetricKeyType !== "ed25519") throw new EventKeysError(`${join(dir, keyFile)} is an ${key.asymmetricKeyType ?? "unknown"} key; an Ed25519 key is needed`);
  const own = keys.get(service) as KeyObject;
  if (!createPublicKey(key).export({ type: "spki", format: "der" }).equals(own.export({ type: "spki", format: "der" }))) {
    throw new EventKeysError(`${join(dir, keyFile)} does not match ${join(dir, `${service}.pub`)}: others would pass over every record ${service} writes`);
  }
  const { retired, named } = otherKeys(dir, keys);
  assertOneServicePerKey(dir, keys, retired);
  const retiredAtMs = retirementInstants(dir, keys, named);
  let unsignedBefore: Date | undefined;
  const cutOffPath = join(dir, UNSIGNED_BEFORE_FILE);
  if (existsSync(cutOffPath)) unsignedBefore = new Date(instantIn(cutOffPath));
  return {
    signer: { service, key },
    trust: {
      keys,
      ...(retired.size === 0 ? {} : { retired }),
      ...(retiredAtMs.size === 0 ? {} : { retiredAtMs }),
      ...(unsignedBefore === undefined ? {} : { unsignedBefore }),
    },
  };
}

/**
 * A key trusted for two services would let the one's private key sign as the other (its types,
 * its model output): refused, naming both.
 */
function assertOneServicePerKey(dir: string, current: ReadonlyMap<EmittingService, KeyObject>, retired: ReadonlyMap<EmittingService, readonly KeyObject[]>): void {
  const owner = new Map<string, EmittingService>();
  for (const service of SIGNING_SERVICES) {
    for (const key of [current.get(service) as KeyObject, ...(retired.get(service) ?? [])]) {
      const id = keyIdOf(key);
      const other = owner.get(id);
      if (other !== undefined && other !== service) {
        throw new EventKeysError(`${dir} trusts the key ${id} for both ${other} and ${service}: each service signs with a key of its own, or either could write the other's events`);
      }
      owner.set(id, service);
    }
  }
}

const OTHER_KEY_FILE = /^(.+)\.([A-Za-z0-9_-]{1,64})\.pub$/;

/**
 * The services' other public keys (`<service>.<name>.pub`), each read once: by service those that
 * are not its current key (`retired`), and every one by file name (`named`, for the retirement
 * instants beside them). A file that looks like one but names no service is refused rather than
 * skipped: a misspelt name would leave a rotated key untrusted.
 */
function otherKeys(dir: string, current: ReadonlyMap<EmittingService, KeyObject>): { retired: Map<EmittingService, KeyObject[]>; named: Map<string, KeyObject> } {
  const retired = new Map<EmittingService, KeyObject[]>();
  const named = new Map<string, KeyObject>();
  for (const file of readdirSync(dir).sort()) {
    const match = OTHER_KEY_FILE.exec(file);
    if (match === null) continue;
    const service = match[1] as EmittingService;
    if (!SIGNING_SERVICES.includes(service)) {
      throw new EventKeysError(`${join(dir, file)} names no service: another key of a service is <service>.<name>.pub, the service one of ${SIGNING_SERVICES.join(", ")}`);
    }
    const key = publicKeyOf(readFileSync(join(dir, file), "utf8"), join(dir, file));
    named.set(file, key);
    if (keyIdOf(key) === keyIdOf(current.get(service) as KeyObject)) continue;
    retired.set(service, [...(retired.get(service) ?? []), key]);
  }
  return { retired, named };
}

const RETIRED_FILE = /^(.+)\.([A-Za-z0-9_-]{1,64})\.retired$/;
/** An instant as the key files write it: an ISO date and time with its zone (Z or an offset). */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * The instant a file holds (epoch ms). Only an ISO time with its zone: `Date.parse` reads a time
 * without one in the machine's zone and takes "12" for 2001, so a retirement hours off, or years,
 * would have passed silently (red-team).
 */
function instantIn(path: string): number {
  const text = readFileSync(path, "utf8").trim();
  const ms = ISO_INSTANT.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(ms)) throw new EventKeysError(`${path} must hold an ISO time with its zone (e.g. 2026-12-07T00:00:00Z), got "${text.slice(0, 40)}"`);
  return ms;
}

/**
 * When each retired key was retired (`<service>.<name>.retired`, an ISO time), by key id. Refused,
 * naming the file: an instant without its key's `.pub` (a misspelt name would retire nothing),
 * one that is no time, and one on the key the service signs with now (its own records would be
 * passed over from then on).
 */
function retirementInstants(dir: string, current: ReadonlyMap<EmittingService, KeyObject>, named: ReadonlyMap<string, KeyObject>): Map<string, number> {
  const instants = new Map<string, number>();
  for (const file of readdirSync(dir).sort()) {
    const match = RETIRED_FILE.exec(file);
    const path = join(dir, file);
    if (match === null) {
      // A misspelt retirement (`.Retired`, `.retired.txt`, `<service>.retired`) would retire nothing.
      if (/\.retire/i.test(file) && !file.startsWith("..")) {
        throw new EventKeysError(`${path} looks like a retirement but is not one: a key's retirement is <service>.<name>.retired, beside its <service>.<name>.pub`);
      }
      continue;
    }
    const keyFile = `${match[1]}.${match[2]}.pub`;
    const key = named.get(keyFile);
    if (key === undefined) throw new EventKeysError(`${path} retires a key that is not there: ${keyFile} is missing`);
    const ms = instantIn(path);
    const service = match[1] as EmittingService;
    if (keyIdOf(key) === keyIdOf(current.get(service) as KeyObject)) {
      throw new EventKeysError(`${path} retires the key ${service} signs with now (${service}.pub): retire a key only once its service signs with another`);
    }
    // One key under two names with two instants: the earlier holds.
    const id = keyIdOf(key);
    instants.set(id, Math.min(ms, instants.get(id) ?? ms));
  }
  return instants;
}

/**
 * The store's signing for `service` when EVENT_KEYS_DIR is set (none when it is not), each
 * passed-over record logged and counted in `agentrt_store_untrusted_records_total`.
 */
export function eventSigningFor(dir: string | undefined, service: EmittingService, metrics: Metrics, logger: Logger): RecordSigning {
  if (dir === undefined) return {};
  const refused = metrics.counter("agentrt_store_untrusted_records_total", "Records passed over because they are not signed as the event keys require", ["service"]);
  return {
    ...loadEventSigning(dir, service),
    onUntrusted: ({ subject, seq, reason }) => {
      refused.inc({ service });
      logger.warn({ subject, seq, reason }, "passed over a record that is not signed as the event keys require");
    },
  };
}

/**
 * Writes a key pair per service into `dir` (private keys mode 0600), and the time from which
 * records must be signed; keys already there are kept. Returns whether it made any.
 */
export function writeEventKeys(dir: string, now: Date = new Date()): boolean {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let made = false;
  for (const service of SIGNING_SERVICES) {
    if (existsSync(join(dir, `${service}.key`)) && existsSync(join(dir, `${service}.pub`))) continue;
    const pair = generateKeyPairSync("ed25519");
    writeFileSync(join(dir, `${service}.key`), pair.privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
    writeFileSync(join(dir, `${service}.pub`), pair.publicKey.export({ type: "spki", format: "pem" }));
    made = true;
  }
  if (!existsSync(join(dir, UNSIGNED_BEFORE_FILE))) writeFileSync(join(dir, UNSIGNED_BEFORE_FILE), `${now.toISOString()}\n`);
  return made;
}
