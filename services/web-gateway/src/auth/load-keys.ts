// Loads the hashed API keys from a file or an env value, parsed with the keys schema (a
// malformed keys file stops the gateway at start-up rather than letting it run open).
import { readFileSync } from "node:fs";
import { keysFileSchema, type StoredKey } from "./keys.ts";

export function loadKeys(source: { file?: string; json?: string }): StoredKey[] {
  const texts = [source.file === undefined ? undefined : readFileSync(source.file, "utf8"), source.json].filter((t): t is string => t !== undefined);
  return texts.flatMap((text) => keysFileSchema.parse(JSON.parse(text)).keys);
}
