// Writes one JSON Schema file per event type into packages/contract/json-schema/.
// Run with `pnpm gen:schemas`; the contract's unit tests fail when the files are stale.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { allEventJsonSchemas } from "../src/index.ts";

const outDir = join(dirname(fileURLToPath(import.meta.url)), "..", "json-schema");
rmSync(outDir, { recursive: true, force: true });
for (const { file, text } of allEventJsonSchemas()) {
  const target = join(outDir, file);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, text);
}
process.stdout.write(`wrote ${allEventJsonSchemas().length} schemas to ${outDir}\n`);
