// API keys for system tests that run the gateway as a process, two ways:
// - `mintKey` / `keysJson`: keys in the gateway's wire format (`agrt_<id>_<secret>`, stored as
//   id + salt + sha256(salt + secret)) and the AGENTRT_KEYS_JSON document the gateway loads; a
//   drift from the gateway's format shows up as 401s in the tests that use them.
// - `keysFile`: keys minted by the real CLI (`agents keys create`) into a keys file the gateway
//   loads with AGENTRT_KEYS_FILE: the same path an operator takes.
import { createHash, randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "../../support/processes.ts";
import { scratchDir } from "@agentrt/testing";

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

export interface KeysFile {
  readonly file: string;
  mint(prefix: string, verbs: readonly string[]): string;
}

export function keysFile(): KeysFile {
  const file = join(scratchDir("agentrt-keys-"), "keys.json");
  return {
    file,
    mint(prefix, verbs) {
      const out = execFileSync(process.execPath, ["--import", "tsx", join(repoRoot, "services/web-gateway/src/cli/main.ts"), "keys", "create", "--prefix", prefix, "--verbs", verbs.join(","), "--file", file], {
        cwd: repoRoot,
        encoding: "utf8",
      });
      const key = out.split("\n")[0]!.trim();
      if (!/^agrt_/.test(key)) throw new Error(`keys create printed no key: ${out}`);
      return key;
    },
  };
}
