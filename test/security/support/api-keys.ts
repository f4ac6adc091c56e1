// API keys for system tests, minted by the real CLI (`agents keys create`) into a keys file the
// gateway process loads with AGENTRT_KEYS_FILE: the same path an operator takes.

import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../../support/processes.ts";

export interface KeysFile {
  readonly file: string;
  mint(prefix: string, verbs: readonly string[]): string;
}

export function keysFile(): KeysFile {
  const file = join(mkdtempSync(join(tmpdir(), "agentrt-keys-")), "keys.json");
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
