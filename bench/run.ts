// `pnpm bench NAME [ARGS…]` runs bench/NAME/NAME.bench.ts (or the only *.bench.ts there) with
// the arguments passed through; with no name it lists the benchmarks. Figures go to
// BENCHMARKS.md by hand, with the command that produced them.

import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

function benchFiles(): Map<string, string> {
  const found = new Map<string, string>();
  for (const name of readdirSync(here).sort()) {
    const dir = join(here, name);
    if (name === "node_modules" || !statSync(dir).isDirectory()) continue;
    const files = readdirSync(dir).filter((f) => f.endsWith(".bench.ts"));
    const own = files.find((f) => f === `${name}.bench.ts`) ?? (files.length === 1 ? files[0] : undefined);
    if (own !== undefined) found.set(name, join(dir, own));
    for (const f of files) if (f !== own) found.set(`${name}/${f.replace(/\.bench\.ts$/, "")}`, join(dir, f));
  }
  return found;
}

const [name, ...args] = process.argv.slice(2);
const benches = benchFiles();
const file = name === undefined ? undefined : benches.get(name);
if (file === undefined || !existsSync(file)) {
  if (name !== undefined) process.stderr.write(`no benchmark named "${name}"\n`);
  process.stderr.write(`usage: pnpm bench NAME [ARGS…]\nbenchmarks:\n${[...benches.keys()].map((b) => `  ${b}`).join("\n")}\n`);
  process.exit(name === undefined ? 0 : 2);
}
const tsx = join(here, "..", "node_modules", ".bin", "tsx");
const result = spawnSync(tsx, [file, ...args], { stdio: "inherit" });
process.exit(result.status ?? 1);
