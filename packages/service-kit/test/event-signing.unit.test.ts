// The services' event keys (event-signing.ts): a directory written once, read by each service
// for its own key and everyone's public keys; anything wrong in it stops the service at start
// with the file and the rule, never a service that signs or trusts half.

import { generateKeyPairSync } from "node:crypto";
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { keyIdOf } from "@agentrt/streams/jetstream";
import { SIGNING_SERVICES, UNSIGNED_BEFORE_FILE, loadEventSigning, writeEventKeys } from "../src/event-signing.ts";
import { scratchDir } from "@agentrt/testing";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function keysDir(): string {
  const parent = scratchDir("agentrt-keys-test-");
  dirs.push(parent);
  const dir = join(parent, "keys");
  writeEventKeys(dir, new Date("2026-12-07T00:00:00.000Z"));
  return dir;
}

describe("the event keys directory", () => {
  it("holds a private key per service (owner-only), every public key and the cut-off; writing it again keeps them", () => {
    const dir = keysDir();
    expect(statSync(dir).mode & 0o077).toBe(0);
    for (const service of SIGNING_SERVICES) expect(statSync(join(dir, `${service}.key`)).mode & 0o077).toBe(0);
    const before = readFileSync(join(dir, "llm-driver.key"), "utf8");
    expect(writeEventKeys(dir)).toBe(false);
    expect(readFileSync(join(dir, "llm-driver.key"), "utf8")).toBe(before);
    const signing = loadEventSigning(dir, "llm-driver");
    expect(signing.signer.service).toBe("llm-driver");
    expect([...signing.trust.keys.keys()].sort()).toEqual([...SIGNING_SERVICES].sort());
    expect(signing.trust.unsignedBefore?.toISOString()).toBe("2026-12-07T00:00:00.000Z");
  });

  it("given other public keys of a service (<service>.<name>.pub), when loaded, then each is trusted beside the current one, which alone signs", () => {
    const dir = keysDir();
    const old = generateKeyPairSync("ed25519").publicKey;
    const older = generateKeyPairSync("ed25519").publicKey;
    writeFileSync(join(dir, "llm-driver.2026-11.pub"), old.export({ type: "spki", format: "pem" }));
    writeFileSync(join(dir, "llm-driver.2026-10.pub"), older.export({ type: "spki", format: "pem" }));
    // The current key listed again under another name is not a second key
    writeFileSync(join(dir, "llm-driver.current.pub"), readFileSync(join(dir, "llm-driver.pub")));
    const signing = loadEventSigning(dir, "agent-reducer");
    expect(signing.trust.retired?.get("llm-driver")?.map(keyIdOf)).toEqual([keyIdOf(older), keyIdOf(old)]);
    expect([...(signing.trust.retired?.keys() ?? [])]).toEqual(["llm-driver"]);
    expect(keyIdOf(signing.signer.key)).toBe(keyIdOf(signing.trust.keys.get("agent-reducer")!));
  });

  it("given a retirement instant beside another key (<service>.<name>.retired), when loaded, then that key is trusted for records stored before it only", () => {
    const dir = keysDir();
    const old = generateKeyPairSync("ed25519").publicKey;
    const next = generateKeyPairSync("ed25519").publicKey;
    writeFileSync(join(dir, "llm-driver.2026-11.pub"), old.export({ type: "spki", format: "pem" }));
    writeFileSync(join(dir, "llm-driver.2026-11.retired"), "2026-12-07T10:00:00Z\n");
    writeFileSync(join(dir, "llm-driver.next.pub"), next.export({ type: "spki", format: "pem" }));
    const signing = loadEventSigning(dir, "agent-reducer");
    expect([...(signing.trust.retiredAtMs ?? [])]).toEqual([[keyIdOf(old), Date.parse("2026-12-07T10:00:00Z")]]);
    // The same key under another name, retired earlier: the earlier instant holds. Offsets are read as such.
    writeFileSync(join(dir, "llm-driver.copy.pub"), old.export({ type: "spki", format: "pem" }));
    writeFileSync(join(dir, "llm-driver.copy.retired"), "2026-12-07T09:00:00+01:00");
    expect(loadEventSigning(dir, "agent-reducer").trust.retiredAtMs?.get(keyIdOf(old))).toBe(Date.parse("2026-12-07T08:00:00Z"));
    // Without any, the trust holds no instants at all.
    expect(loadEventSigning(keysDir(), "agent-reducer").trust.retiredAtMs).toBeUndefined();
  });

  it.each<[string, (dir: string) => void, RegExp]>([
    [
      "a retirement instant has no key beside it",
      (dir: string) => writeFileSync(join(dir, "llm-driver.2026-11.retired"), "2026-12-07T10:00:00Z"),
      /llm-driver\.2026-11\.retired retires a key that is not there: llm-driver\.2026-11\.pub is missing/,
    ],
    [
      "a retirement instant is not a time",
      (dir: string) => {
        writeFileSync(join(dir, "llm-driver.old.pub"), generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }));
        writeFileSync(join(dir, "llm-driver.old.retired"), "last week");
      },
      /llm-driver\.old\.retired must hold an ISO time with its zone .* got "last week"/,
    ],
    [
      "a retirement instant has no zone (it would be read in the machine's)",
      (dir: string) => {
        writeFileSync(join(dir, "llm-driver.old.pub"), generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }));
        writeFileSync(join(dir, "llm-driver.old.retired"), "2026-12-07T10:00:00");
      },
      /llm-driver\.old\.retired must hold an ISO time with its zone .* got "2026-12-07T10:00:00"/,
    ],
    ...["llm-driver.old.Retired", "llm-driver.old.retired.txt", "llm-driver.old.retire", "llm-driver.retired"].map(
      (name) =>
        [
          `a retirement is misspelt (${name})`,
          (dir: string) => {
            writeFileSync(join(dir, "llm-driver.old.pub"), generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }));
            writeFileSync(join(dir, name), "2026-12-07T10:00:00Z");
          },
          new RegExp(`${name.replace(/\./g, "\\.")} looks like a retirement but is not one: a key's retirement is <service>\\.<name>\\.retired`),
        ] satisfies [string, (dir: string) => void, RegExp],
    ),
    ["the cut-off has no zone", (dir: string) => writeFileSync(join(dir, UNSIGNED_BEFORE_FILE), "2026-12-07T00:00:00"), /unsigned-before must hold an ISO time with its zone/],
    [
      "a retirement instant retires the key its service signs with now",
      (dir: string) => {
        writeFileSync(join(dir, "llm-driver.current.pub"), readFileSync(join(dir, "llm-driver.pub")));
        writeFileSync(join(dir, "llm-driver.current.retired"), "2026-12-07T10:00:00Z");
      },
      /llm-driver\.current\.retired retires the key llm-driver signs with now/,
    ],
    [
      "another key names no service",
      (dir: string) => writeFileSync(join(dir, "llm-drivr.old.pub"), readFileSync(join(dir, "llm-driver.pub"))),
      /llm-drivr\.old\.pub names no service: another key of a service is <service>\.<name>\.pub, the service one of web-gateway, agent-reducer, llm-driver, capability-host/,
    ],
    [
      "another key is not a key",
      (dir: string) => writeFileSync(join(dir, "capability-host.old.pub"), "nonsense"),
      /capability-host\.old\.pub is not an Ed25519 public key or certificate in PEM/,
    ],
    [
      "another key of one service is a key of another service",
      (dir: string) => writeFileSync(join(dir, "agent-reducer.old.pub"), readFileSync(join(dir, "llm-driver.pub"))),
      /trusts the key [0-9a-f]{16} for both agent-reducer and llm-driver: each service signs with a key of its own/,
    ],
    [
      "a .pub file holds a private key",
      (dir: string) => writeFileSync(join(dir, "llm-driver.next.pub"), generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" })),
      /llm-driver\.next\.pub holds a private key; a \.pub file holds only a public key or a certificate/,
    ],
    ["a service's public key is missing", (dir: string) => rmSync(join(dir, "capability-host.pub")), /capability-host\.pub is missing: every service's public key is needed/],
    ["its own private key is missing", (dir: string) => rmSync(join(dir, "agent-reducer.key")), /agent-reducer\.key is missing: agent-reducer signs its records with it/],
    [
      "its private key is another pair's",
      (dir: string) => writeFileSync(join(dir, "agent-reducer.key"), generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" })),
      /agent-reducer\.key does not match .*agent-reducer\.pub: others would pass over every record agent-reducer writes/,
    ],
    [
      "a public key is not Ed25519",
      (dir: string) => writeFileSync(join(dir, "llm-driver.pub"), generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ type: "spki", format: "pem" })),
      /llm-driver\.pub is not an Ed25519 public key or certificate in PEM \(an ec key\)/,
    ],
    ["a private key is not PEM", (dir: string) => writeFileSync(join(dir, "agent-reducer.key"), "nonsense"), /agent-reducer\.key is not a private key in PEM/],
    ["the cut-off is not a time", (dir: string) => writeFileSync(join(dir, UNSIGNED_BEFORE_FILE), "yesterday"), /unsigned-before must hold an ISO time with its zone .* got "yesterday"/],
  ])("refuses to load when %s, naming the file and the rule", (_what, spoil, message) => {
    const dir = keysDir();
    spoil(dir);
    expect(() => loadEventSigning(dir, "agent-reducer")).toThrow(message);
  });
});
