// `pnpm agents keys create [--prefix /agents/team] [--verbs read,append,operate,admin] [--name N] [--file keys.json]`:
// mints an API key (by default read under /), prints it once, and stores only its salted hash in the
// keys file (by default AGENTRT_KEYS_FILE, else .data/keys.json).

import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { keysFileSchema, mintApiKey, scopeSchema } from "../../auth/keys.ts";
import { parseArgs } from "../gateway-client.ts";

type Out = (text: string) => void;

export async function keysCommand(args: readonly string[], out: Out): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== "create") throw new Error("usage: agents keys create [--prefix PATH] [--verbs read,append,operate,admin] [--name N] [--file FILE] (defaults: read under /)");
  const { flags } = parseArgs(rest, ["prefix", "verbs", "name", "file"]);
  const scope = scopeSchema.parse({ prefix: flags.prefix ?? "/", verbs: String(flags.verbs ?? "read").split(",") });
  const file = typeof flags.file === "string" ? flags.file : (process.env.AGENTRT_KEYS_FILE ?? ".data/keys.json");
  const existing = existsSync(file) ? keysFileSchema.parse(JSON.parse(await readFile(file, "utf8"))) : { keys: [] };
  const { apiKey, stored } = mintApiKey([scope], typeof flags.name === "string" ? flags.name : undefined);
  await writeFile(file, `${JSON.stringify({ keys: [...existing.keys, stored] }, null, 2)}\n`, { mode: 0o600 });
  out(`${apiKey}\n`);
  out(`# stored key ${stored.id} (${scope.verbs.join(",")} under ${scope.prefix}) in ${file}; the key above is not saved anywhere\n`);
  return 0;
}
