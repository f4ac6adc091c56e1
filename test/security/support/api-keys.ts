// API keys for system tests that run the gateway as a process: mints keys in the gateway's
// wire format (`agrt_<id>_<secret>`, stored as id + salt + sha256(salt + secret)) and the
// AGENTRT_KEYS_JSON document the gateway loads. A drift from the gateway's format shows up as
// 401s in the tests that use these keys.
import { createHash, randomBytes } from "node:crypto";

export interface KeyScope {
  readonly prefix: string;
  readonly verbs: readonly string[];
}

export interface SystemKey {
  readonly apiKey: string;
  readonly id: string;
  readonly scopes: readonly KeyScope[];
}

export function mintKey(scopes: readonly KeyScope[]): SystemKey & { readonly stored: Record<string, unknown> } {
  const id = randomBytes(6).toString("hex");
  const secret = randomBytes(32).toString("base64url");
  const salt = randomBytes(16).toString("hex");
  const hash = createHash("sha256").update(salt).update(secret).digest("hex");
  return { apiKey: `agrt_${id}_${secret}`, id, scopes, stored: { id, salt, hash, scopes } };
}

export function keysJson(keys: readonly { stored: Record<string, unknown> }[]): string {
  return JSON.stringify({ keys: keys.map((k) => k.stored) });
}
