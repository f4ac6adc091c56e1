// The checked-in ts-proto output must equal a fresh generation from proto/ (CI fails when it
// is stale). Skips only when protoc is not installed (scripts/setup.sh installs it).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../../..");
const checkedIn = join(root, "packages/gateway-proto/src/generated");
const hasProtoc = (() => {
  try {
    execFileSync("protoc", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)))
    .sort();
}

describe("generated gRPC code", () => {
  it.skipIf(!hasProtoc)("is fresh: regenerating from proto/ gives the checked-in files byte for byte", () => {
    const out = mkdtempSync(join(tmpdir(), "agentrt-proto-"));
    try {
      execFileSync(join(root, "scripts/gen-proto.sh"), [out], { cwd: root, stdio: "pipe" });
      expect(files(out)).toEqual(files(checkedIn));
      for (const file of files(out)) {
        expect(readFileSync(join(out, file), "utf8"), `${file} is stale: run scripts/gen-proto.sh`).toBe(readFileSync(join(checkedIn, file), "utf8"));
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
