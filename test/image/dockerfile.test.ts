// The Dockerfile cannot be built here (no container engine), so its structure is checked
// against the repository: the lockfile install sees every workspace package's manifest, the
// build runs scripts/build-prod.sh (what production-tree.test.ts proves), the runtime stage
// runs as the chart's non-root user, and the build context leaves out what must not ship.

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { repoRoot } from "../helm/render.ts";

const dockerfile = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
const stages = dockerfile.split(/^FROM /m).slice(1);
const copies = [...dockerfile.matchAll(/^COPY (?!--from)(\S+) (\S+)$/gm)].map((m) => m[1]!);

function workspaceManifests(): string[] {
  const globs = (YAML.parse(readFileSync(join(repoRoot, "pnpm-workspace.yaml"), "utf8")) as { packages: string[] }).packages;
  return globs.flatMap((glob) => {
    if (!glob.endsWith("/*")) return existsSync(join(repoRoot, glob, "package.json")) ? [`${glob}/package.json`] : [];
    const dir = glob.slice(0, -2);
    return readdirSync(join(repoRoot, dir)).filter((name) => existsSync(join(repoRoot, dir, name, "package.json"))).map((name) => `${dir}/${name}/package.json`);
  });
}

describe("Dockerfile", () => {
  it("has a build stage and a runtime stage", () => {
    expect(stages.map((s) => s.split("\n")[0])).toEqual(["${NODE_IMAGE} AS build", "${NODE_IMAGE} AS runtime"]);
  });

  it("installs from the lockfile with every workspace manifest in place before the sources", () => {
    const build = stages[0]!;
    const install = build.indexOf("pnpm install --frozen-lockfile");
    const sources = build.indexOf("COPY . .");
    expect(install).toBeGreaterThan(0);
    expect(sources).toBeGreaterThan(install);
    const manifests = workspaceManifests();
    expect(manifests.length).toBeGreaterThan(8);
    const missing = manifests.filter((m) => !copies.some((c) => c === m || m.startsWith(`${c.replace(/\/$/, "")}/`)));
    expect(missing, "package.json files the frozen install would not see").toEqual([]);
  });

  it("builds with scripts/build-prod.sh and ships only its output, as a non-root user", () => {
    expect(stages[0]).toMatch(/bash scripts\/build-prod\.sh \/app/);
    const runtime = stages[1]!;
    expect(runtime).toMatch(/COPY --from=build --chown=root:root \/app \/app/);
    expect(runtime).not.toMatch(/^COPY (?!--from)/m);
    expect(runtime).toMatch(/^USER 10001:10001$/m);
    expect(runtime).not.toMatch(/tsx|pnpm install/);
    // The chart's security context and the image agree on the user.
    const values = YAML.parse(readFileSync(join(repoRoot, "deploy/helm/agentrt/values.yaml"), "utf8")) as { podSecurityContext: { runAsUser: number } };
    expect(values.podSecurityContext.runAsUser).toBe(10001);
  });

  it("keeps node_modules, git metadata, local data and build output out of the context", () => {
    const ignored = readFileSync(join(repoRoot, ".dockerignore"), "utf8").split("\n").map((l) => l.trim());
    for (const pattern of ["**/node_modules", ".git", ".data", "**/dist", "deploy/helm/*/charts"]) expect(ignored).toContain(pattern);
  });
});
