// The contract's scenario fixtures, reproduced byte for byte through the replay CLI
// (`pnpm agents replay FILE --placeholder-protocol`), exactly as a user would run it.

import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { describe, expect, it } from "vitest";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
// CI checks out shared/ beside the clone; locally it is /work/shared beside /work/main.
const scenariosDir = resolve(repoRoot, "../shared/spec/scenarios");

interface ExpectFile {
  expect: {
    requests?: { offset: number; model?: string; messages: { role: string; content: string }[] }[];
    derived?: { from_offset: number; type: string; payload: unknown }[];
    no_script_for_offsets?: number[];
    state_after?: Record<string, unknown>;
  };
}

interface ReplayOutput {
  requests: { offset: number; model: string; messages: { role: string; content: string }[] }[];
  derived: { fromOffset: number; type: string; payload: unknown }[];
  state: Record<string, unknown>;
}

function runCli(file: string): ReplayOutput {
  const stdout = execFileSync(
    join(repoRoot, "node_modules/.bin/tsx"),
    [join(repoRoot, "services/web-gateway/src/cli/main.ts"), "replay", file, "--placeholder-protocol"],
    { cwd: repoRoot, encoding: "utf8", timeout: 60_000 },
  );
  return JSON.parse(stdout) as ReplayOutput;
}

/** Objects: every expected key contained; arrays and primitives: exactly equal. */
function contains(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => contains(actual[i], e))
    );
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return false;
    return Object.entries(expected).every(([k, v]) => contains((actual as Record<string, unknown>)[k], v));
  }
  return Object.is(actual, expected);
}

const fixtures = ["1-birth.yaml", "1b-script.yaml"];

describe.runIf(existsSync(scenariosDir))("scenario fixtures through `pnpm agents replay`", () => {
  for (const name of fixtures) {
    describe(name, () => {
      const file = join(scenariosDir, name);
      const expected = (parseYaml(readFileSync(file, "utf8")) as ExpectFile).expect;
      const output = runCli(file);

      it("renders exactly the expected requests, message for message", () => {
        const wanted = expected.requests ?? [];
        expect(output.requests.map((r) => r.offset)).toEqual(
          expect.arrayContaining(wanted.map((r) => r.offset)),
        );
        for (const request of wanted) {
          const actual = output.requests.find((r) => r.offset === request.offset);
          expect(actual?.messages, `request @${request.offset}`).toEqual(request.messages);
          if (request.model !== undefined) expect(actual?.model).toBe(request.model);
        }
      });

      it("derives every expected event from its offset", () => {
        for (const d of expected.derived ?? []) {
          const candidates = output.derived.filter((a) => a.fromOffset === d.from_offset && a.type === d.type);
          expect(
            candidates.some((c) => contains(c.payload, d.payload)),
            `derived ${d.type} from @${d.from_offset}; got ${JSON.stringify(candidates)}`,
          ).toBe(true);
        }
      });

      it("requests no script for replies that end the turn", () => {
        for (const offset of expected.no_script_for_offsets ?? []) {
          const scripts = output.derived.filter(
            (a) => a.fromOffset === offset && a.type === "capability-host/script-run-requested",
          );
          expect(scripts, `script requested from @${offset}`).toEqual([]);
        }
      });

      it("folds to the expected state", () => {
        const stateAfter = expected.state_after ?? {};
        for (const [key, value] of Object.entries(stateAfter)) {
          expect(contains(output.state[key], value), `state.${key}: ${JSON.stringify(output.state[key])}`).toBe(true);
        }
      });
    });
  }
});

describe("the fixtures are present", () => {
  it("finds ../shared/spec/scenarios beside the repository", () => {
    // Without them the suite above is skipped; say so loudly rather than pass silently.
    expect(existsSync(join(scenariosDir, "1-birth.yaml")), `missing ${scenariosDir}`).toBe(true);
  });
});
