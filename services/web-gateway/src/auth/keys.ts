// API keys: a presented key is `agrt_<id>_<secret>`; at rest only the id, a per-key salt and
// sha256(salt + secret) are kept (the secret is 32 random bytes, so a fast salted hash is
// enough — there is nothing to brute-force). Each key carries scopes: stream-path prefixes
// and the verbs allowed under them: `read`; `append` (user input); `operate` (steering an
// agent: pause/resume, rewrite, configure, preamble, bindings, script runs; see the contract's
// API_APPENDABLE); `admin` (every verb). `append` and `operate` do not imply each other.

import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { pathUnder, scopesAllow } from "@agentrt/contract";
import { z } from "zod";

export const VERBS = ["read", "append", "operate", "admin"] as const;
export type Verb = (typeof VERBS)[number];

export const scopeSchema = z.strictObject({
  prefix: z.string().startsWith("/"),
  verbs: z.array(z.enum(VERBS)).min(1),
});

export const storedKeySchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9]+$/, "letters and digits only"),
  name: z.string().optional(),
  salt: z.string().regex(/^[0-9a-f]{32}$/, "32 hex digits"),
  hash: z.string().regex(/^[0-9a-f]{64}$/, "64 hex digits (sha256)"),
  scopes: z.array(scopeSchema).min(1),
  rateLimit: z.strictObject({ perSecond: z.number().positive(), burst: z.number().int().positive() }).optional(),
});

export const keysFileSchema = z.strictObject({ keys: z.array(storedKeySchema) });

export type StoredKey = z.infer<typeof storedKeySchema>;
export type Scope = z.infer<typeof scopeSchema>;

function hashSecret(salt: string, secret: string): string {
  return createHash("sha256").update(salt).update(secret).digest("hex");
}

/** Mints a key: returns the one-time plaintext and the record to store. */
export function mintApiKey(scopes: Scope[], name?: string): { apiKey: string; stored: StoredKey } {
  const id = randomBytes(6).toString("hex");
  const secret = randomBytes(32).toString("base64url");
  const salt = randomBytes(16).toString("hex");
  return {
    apiKey: `agrt_${id}_${secret}`,
    stored: { id, ...(name === undefined ? {} : { name }), salt, hash: hashSecret(salt, secret), scopes },
  };
}

/** The stored key a presented key belongs to, or null when it matches none. */
export function verifyApiKey(keys: ReadonlyMap<string, StoredKey>, presented: string): StoredKey | null {
  const match = /^agrt_([A-Za-z0-9]+)_([A-Za-z0-9_-]+)$/.exec(presented);
  if (match === null) return null;
  const stored = keys.get(match[1]!);
  if (stored === undefined) return null;
  const actual = Buffer.from(hashSecret(stored.salt, match[2]!), "hex");
  return timingSafeEqual(actual, Buffer.from(stored.hash, "hex")) ? stored : null;
}

// The segment-boundary rule (`/a` covers `/a/b`, not `/ab`) is the contract's, shared with script grants.
export { pathUnder };

/** `admin` implies every verb. */
export function scopeAllows(scopes: readonly Scope[], verb: Verb, path: string): boolean {
  return scopesAllow(scopes, verb, path);
}
