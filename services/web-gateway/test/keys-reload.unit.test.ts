// Given a gateway following its keys file, when a key is revoked or added there (a Kubernetes
// Secret updated in place), then it takes effect without a restart; a file that stops parsing
// keeps the keys in force.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { testLogger, waitFor, scratchDir } from "@agentrt/testing";
import { describe, expect, it } from "vitest";
import { Authenticator } from "../src/auth/authenticator.ts";
import { mintApiKey } from "../src/auth/keys.ts";
import { followKeysFile, loadKeys } from "../src/auth/load-keys.ts";

const accepted = (auth: Authenticator, key: string): boolean => {
  try {
    auth.authenticate(key);
    return true;
  } catch {
    return false;
  }
};

describe("the keys file, followed", () => {
  it("revokes and adds keys without a restart, and keeps the keys in force when the file stops parsing", async () => {
    const file = join(scratchDir("agentrt-keys-"), "keys.json");
    const a = mintApiKey([{ prefix: "/agents/a", verbs: ["read"] }]);
    const b = mintApiKey([{ prefix: "/agents/b", verbs: ["read"] }]);
    writeFileSync(file, JSON.stringify({ keys: [a.stored] }));
    const loaded = loadKeys({ file });
    const auth = new Authenticator({ keys: loaded.keys, devMode: false, defaultRateLimit: { perSecond: 1000, burst: 1000 }, nowMs: Date.now });
    const stop = followKeysFile({ file }, { since: loaded.fileText!, everyMs: 20, onKeys: (keys) => auth.replaceKeys(keys), log: testLogger("keys") });
    try {
      expect([accepted(auth, a.apiKey), accepted(auth, b.apiKey)]).toEqual([true, false]);
      // When A is revoked and B added
      writeFileSync(file, JSON.stringify({ keys: [b.stored] }));
      await waitFor(() => accepted(auth, b.apiKey), { timeoutMs: 5_000, what: "the new key to be accepted" });
      expect(accepted(auth, a.apiKey)).toBe(false);
      // When the file is half-written or broken, the keys in force stay
      writeFileSync(file, '{"keys": [');
      await new Promise((r) => setTimeout(r, 200));
      expect([accepted(auth, a.apiKey), accepted(auth, b.apiKey)]).toEqual([false, true]);
    } finally {
      stop();
    }
  });

  it("applies a revocation made between loading the keys and following the file (the gateway waits for NATS in between)", async () => {
    const file = join(scratchDir("agentrt-keys-"), "keys.json");
    const a = mintApiKey([{ prefix: "/agents/a", verbs: ["read"] }]);
    writeFileSync(file, JSON.stringify({ keys: [a.stored] }));
    const loaded = loadKeys({ file });
    const auth = new Authenticator({ keys: loaded.keys, devMode: false, defaultRateLimit: { perSecond: 1000, burst: 1000 }, nowMs: Date.now });
    // Given the key revoked while start-up waited
    writeFileSync(file, JSON.stringify({ keys: [] }));
    // When the file is followed from then on, it is compared with what was loaded
    const stop = followKeysFile({ file }, { since: loaded.fileText!, everyMs: 20, onKeys: (keys) => auth.replaceKeys(keys), log: testLogger("keys") });
    try {
      await waitFor(() => !accepted(auth, a.apiKey), { timeoutMs: 5_000, what: "the revoked key to be refused" });
    } finally {
      stop();
    }
  });

  it("names the keys revoked or changed (their live streams end), not those left as they were", () => {
    const a = mintApiKey([{ prefix: "/agents/a", verbs: ["read"] }]);
    const b = mintApiKey([{ prefix: "/agents/b", verbs: ["read"] }]);
    const auth = new Authenticator({ keys: [a.stored, b.stored], devMode: false, defaultRateLimit: { perSecond: 1000, burst: 1000 }, nowMs: Date.now });
    expect(auth.replaceKeys([a.stored, b.stored])).toEqual([]);
    // b narrowed to a smaller prefix, a left as it was
    expect(auth.replaceKeys([a.stored, { ...b.stored, scopes: [{ prefix: "/agents/b/x", verbs: ["read"] }] }])).toEqual([b.stored.id]);
    // a revoked
    expect(auth.replaceKeys([])).toEqual([a.stored.id, b.stored.id]);
  });
});
