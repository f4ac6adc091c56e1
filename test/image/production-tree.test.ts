// The image's contents, proven without a container engine: scripts/build-prod.sh (what the
// Dockerfile runs) builds the production tree; the tree is made read-only; every service is
// started from it as a non-root user (`nobody` when the test runs as root) with the env the
// chart renders for its Deployment (HTTP_HOST=0.0.0.0, AGENTRT_KEYS_FILE from the mounted
// Secret, the chart's command and working directory), against a harness nats-server; then the
// helm test hook's client (bin/smoke-turn.mjs from the same tree) completes a turn on the
// offline model through the gateway's HTTP API with a real API key.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freeLoopbackPort, type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { IVolume } from "kubernetes-models/v1/Volume";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { mintApiKey } from "../../services/web-gateway/src/auth/keys.ts";
import type { Manifest } from "../helm/k8s-schema.ts";
import { containersOf, podTemplates, type PodTemplate } from "../helm/manifests.ts";
import { renderChart, repoRoot } from "../helm/render.ts";

const SERVICES = ["agent-reducer", "llm-driver", "capability-host", "web-gateway"] as const;
const asRoot = process.getuid?.() === 0;
/** `nobody`: the services run as a user that owns nothing in the tree. */
const RUN_AS = asRoot ? { uid: 65534, gid: 65534 } : {};

let work: string;
let tree: string;
let nats: NatsServer;
let buildMs = 0;
let startMs = 0;
let setupMs = 0;
const children = new Map<string, { child: ChildProcess; output: string[]; opsPort: number }>();
let gatewayHttpPort = 0;
let apiKey = "";

function walk(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/** A rendered object's data, stringData decoded alongside. */
function dataOf(manifests: readonly Manifest[], kind: string, name: string): Record<string, string> {
  const object = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (!object) throw new Error(`the chart renders no ${kind} ${name}`);
  const encoded = Object.fromEntries(Object.entries((object.data as Record<string, string> | undefined) ?? {}).map(([k, v]) => [k, kind === "Secret" ? Buffer.from(v, "base64").toString() : v]));
  return { ...encoded, ...((object.stringData as Record<string, string> | undefined) ?? {}) };
}

/** The container's env as the kubelet would build it, with mount paths moved under `root`. */
function podEnv(manifests: readonly Manifest[], pod: PodTemplate, container: IContainer, root: string): { env: Record<string, string>; tmp: string } {
  const mounts = new Map<string, string>();
  let tmp = "";
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.spec.volumes?.find((v: IVolume) => v.name === mount.name);
    const local = join(root, mount.name);
    mkdirSync(local, { recursive: true });
    if (volume?.secret) {
      for (const [file, content] of Object.entries(dataOf(manifests, "Secret", volume.secret.secretName!))) writeFileSync(join(local, file), content);
    } else if (volume?.projected) {
      // As the kubelet projects them: each source's items, a missing key an error unless optional.
      for (const source of volume.projected.sources ?? []) {
        if (!source.secret) throw new Error(`volume ${mount.name} of ${pod.owner} projects a source this test does not map`);
        const data = dataOf(manifests, "Secret", source.secret.name!);
        for (const item of source.secret.items ?? []) {
          const content = data[item.key];
          if (content !== undefined) writeFileSync(join(local, item.path), content);
          else if (source.secret.optional !== true) throw new Error(`volume ${mount.name} of ${pod.owner}: Secret ${source.secret.name} has no key ${item.key}`);
        }
      }
    } else if (volume?.emptyDir) {
      if (RUN_AS.uid !== undefined) chownSync(local, RUN_AS.uid, RUN_AS.gid!);
      if (mount.mountPath === "/tmp") tmp = local;
    } else throw new Error(`volume ${mount.name} of ${pod.owner} has a kind this test does not map`);
    chmodSync(local, 0o755);
    mounts.set(mount.mountPath, local);
  }
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    Object.assign(env, source.secretRef ? dataOf(manifests, "Secret", source.secretRef.name!) : dataOf(manifests, "ConfigMap", source.configMapRef!.name!));
  }
  for (const entry of container.env ?? []) {
    const from = entry.valueFrom;
    if (entry.value !== undefined) env[entry.name] = entry.value;
    else if (from?.fieldRef?.fieldPath === "metadata.name") env[entry.name] = `${pod.component}-prodtree-0`;
    else if (from?.secretKeyRef) env[entry.name] = dataOf(manifests, "Secret", from.secretKeyRef.name!)[from.secretKeyRef.key]!;
    else if (from?.configMapKeyRef) env[entry.name] = dataOf(manifests, "ConfigMap", from.configMapKeyRef.name!)[from.configMapKeyRef.key]!;
    else throw new Error(`env ${entry.name} of ${pod.owner} has a source this test does not map`);
  }
  for (const [name, value] of Object.entries(env)) {
    for (const [mountPath, local] of mounts) {
      if (value === mountPath) env[name] = local;
      else if (value.startsWith(`${mountPath}/`)) env[name] = join(local, value.slice(mountPath.length + 1));
    }
  }
  return { env, tmp };
}

beforeAll(async () => {
  const setupStarted = Date.now();
  work = mkdtempSync(join(tmpdir(), "agentrt-prodtree-"));
  chmodSync(work, 0o755);
  tree = join(work, "app");

  const buildStarted = Date.now();
  const build = spawnSync("bash", [join(repoRoot, "scripts/build-prod.sh"), tree], { cwd: repoRoot, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (build.status !== 0) throw new Error(`build-prod.sh failed (${build.status}):\n${build.stdout.slice(-3000)}\n${build.stderr.slice(-3000)}`);
  buildMs = Date.now() - buildStarted;
  // Read-only, as the image's root filesystem is: nobody may write anywhere in the tree.
  expect(spawnSync("chmod", ["-R", "a-w,a+rX", tree]).status).toBe(0);

  nats = await startNatsServer();
  const minted = mintApiKey([{ prefix: "/", verbs: ["admin"] }], "prodtree-admin");
  apiKey = minted.apiKey;
  gatewayHttpPort = await freeLoopbackPort();
  const valuesFile = join(work, "values.yaml");
  writeFileSync(
    valuesFile,
    YAML.stringify({
      nats: { embedded: { enabled: false } },
      externalNats: { url: nats.url },
      // The chart's default log level: each service's "started" line says how its code was compiled.
      config: { natsStreamReplicas: 1, partitionCount: 8, logLevel: "info" },
      // A cold checker may overrun the default budget and run a script unchecked; the test
      // wants the checker's verdict.
      capabilityHost: { sandbox: { typecheckBudgetMs: 60_000 } },
      webGateway: { httpPort: gatewayHttpPort, grpcPort: await freeLoopbackPort(), shutdownDelaySeconds: 0, apiKeys: { keys: [minted.stored] } },
    }),
  );
  const manifests = await renderChart({ valuesFiles: [valuesFile] });
  const pods = podTemplates(manifests);

  const startStarted = Date.now();
  for (const service of SERVICES) {
    const pod = pods.find((p) => p.component === service)!;
    const container = containersOf(pod)[0]!;
    const { env, tmp } = podEnv(manifests, pod, container, join(work, "volumes", service));
    const opsPort = await freeLoopbackPort();
    const [command, ...args] = container.command!;
    expect(command, "the chart runs node on a compiled entry").toBe("node");
    expect(container.workingDir).toBe("/app");
    const output: string[] = [];
    // PATH and HOME only: nothing from the test's own environment leaks into the service.
    const child = spawn(process.execPath, args, {
      cwd: tree,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmp, TMPDIR: tmp, ...env, OPS_PORT: String(opsPort) },
      stdio: ["ignore", "pipe", "pipe"],
      ...RUN_AS,
    });
    child.stdout.on("data", (d: Buffer) => output.push(d.toString()));
    child.stderr.on("data", (d: Buffer) => output.push(d.toString()));
    children.set(service, { child, output, opsPort });
  }
  for (const [service, { child, output, opsPort }] of children) {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`${service} exited with ${child.exitCode}:\n${output.join("").slice(-3000)}`);
        return (await fetch(`http://127.0.0.1:${opsPort}/readyz`).catch(() => undefined))?.ok === true;
      },
      { timeoutMs: 90_000, intervalMs: 100 },
    ).catch((error: unknown) => {
      throw new Error(`${service} not ready: ${(error as Error).message}\n${output.join("").slice(-3000)}`);
    });
  }
  startMs = Date.now() - startStarted;
  setupMs = Date.now() - setupStarted;
}, 300_000);

afterAll(async () => {
  for (const { child } of children.values()) if (child.exitCode === null) child.kill("SIGKILL");
  await nats?.stop();
  if (work) {
    spawnSync("chmod", ["-R", "u+w", work]);
    rmSync(work, { recursive: true, force: true });
  }
  process.stdout.write(`production tree: set-up ${setupMs} ms (build ${buildMs} ms, four services ready in ${startMs} ms)\n`);
});

describe("the production tree (what the image ships)", () => {
  it("holds compiled JavaScript, no TypeScript sources and no TypeScript loader", () => {
    const files = walk(tree).map((f) => f.slice(tree.length + 1));
    const outsideModules = files.filter((f) => !f.includes("node_modules/"));
    expect(outsideModules.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
    for (const service of SERVICES) {
      expect(outsideModules).toContain(`services/${service}/dist/main.mjs`);
      expect(existsSync(join(tree, "services", service, "node_modules/tsx")), `${service} ships tsx`).toBe(false);
      expect(existsSync(join(tree, "services", service, "node_modules/vitest")), `${service} ships dev deps`).toBe(false);
    }
    expect(outsideModules).toContain("services/capability-host/src/sandbox/sandbox-worker-entry.mjs");
    expect(outsideModules).toContain("services/capability-host/types/itx.d.ts");
    expect(existsSync(join(tree, "services/capability-host/node_modules/typescript/lib/lib.es2022.d.ts")), "the host keeps its checker").toBe(true);
    expect(outsideModules).toContain("services/web-gateway/ui/dist/index.html");
    expect(outsideModules).toContain("bin/smoke-turn.mjs");
  });

  it("serves the built web UI from the read-only tree (no build at start)", async () => {
    const res = await fetch(`http://127.0.0.1:${gatewayHttpPort}/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/<script[^>]+src="\/assets\//);
    expect(children.get("web-gateway")!.output.join("")).not.toMatch(/vite build|building it now/);
  });

  it("completes a turn on the offline model through the gateway's HTTP API, as the helm test does", async () => {
    const run = spawnSync(process.execPath, [join(tree, "bin/smoke-turn.mjs"), "/agents/prodtree/one"], {
      cwd: tree,
      env: { PATH: process.env.PATH ?? "", AGENTRT_URL: `http://127.0.0.1:${gatewayHttpPort}`, AGENTRT_API_KEY: apiKey, SMOKE_TIMEOUT_MS: "90000" },
      encoding: "utf8",
      timeout: 120_000,
      ...RUN_AS,
    });
    if (run.status !== 0) {
      process.stdout.write([...children].map(([s, c]) => `--- ${s}\n${c.output.join("").slice(-2000)}`).join("\n"));
    }
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("[offline model]");
    // Signed as the chart runs it: each service from its own mounted event key, nothing passed over.
    for (const [service, { output }] of children) expect(output.join(""), service).not.toContain("passed over a record");
    const wrong = spawnSync(process.execPath, [join(tree, "bin/smoke-turn.mjs"), "/agents/prodtree/two"], {
      env: { PATH: process.env.PATH ?? "", AGENTRT_URL: `http://127.0.0.1:${gatewayHttpPort}`, AGENTRT_API_KEY: "agrt_0000_wrong" },
      encoding: "utf8",
      ...RUN_AS,
    });
    expect(wrong.status, "an unknown key is refused").toBe(1);
    expect(wrong.stderr).toMatch(/401/);
  });

  it("runs scripts in the capability host from the tree: the checker's .d.ts files, the worker entry, QuickJS", async () => {
    const path = "/agents/prodtree/one";
    const url = (p: string) => `http://127.0.0.1:${gatewayHttpPort}${p}`;
    const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
    const expiresAt = new Date(Date.now() + 5 * 60_000).toISOString();
    const request = (executionId: string, code: string) => ({ type: "capability-host/script-run-requested", payload: { code, executionId, expiresAt } });
    const posted = await fetch(url(`/v1/streams/${encodeURIComponent(path)}/events`), {
      method: "POST",
      headers,
      body: JSON.stringify({ events: [request("api:prodtree-ok", "const n: number = 40 + 2;\nreturn n;"), request("api:prodtree-typo", "const value = 1;\nreturn valeu;")] }),
    });
    expect(posted.ok, await posted.clone().text()).toBe(true);
    const settled = new Map<string, { status: string; failureKind?: string; result?: unknown }>();
    await waitFor(
      async () => {
        const page = (await (await fetch(url(`/v1/streams/${encodeURIComponent(path)}/events?fromOffset=1&limit=500`), { headers })).json()) as {
          events: Array<{ type: string; payload: { executionId?: string; settlement?: { status: string; failureKind?: string; result?: unknown } } }>;
        };
        for (const e of page.events) if (e.type === "capability-host/script-run-settled") settled.set(e.payload.executionId!, e.payload.settlement!);
        // The path also holds the smoke turn's own script (the offline model writes one): wait for ours.
        return settled.has("api:prodtree-ok") && settled.has("api:prodtree-typo");
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    ).catch((error: unknown) => {
      throw new Error(`settled: ${JSON.stringify([...settled])}\nhost:\n${children.get("capability-host")!.output.join("").slice(-3000)}`, { cause: error });
    });
    expect(settled.get("api:prodtree-ok")).toMatchObject({ status: "succeeded", result: 42 });
    expect(settled.get("api:prodtree-typo"), "the TypeScript checker runs from the tree").toMatchObject({ status: "failed", failureKind: "typecheck", error: expect.stringContaining("valeu") });
  });

  it("compiles every service from the V8 code cache the build made, not from source", () => {
    for (const service of SERVICES) {
      expect(existsSync(join(tree, "services", service, "dist/main.cjs.cache")), `${service} ships its code cache`).toBe(true);
      const started = children.get(service)!.output.join("").split("\n").find((line) => line.includes(`"msg":"${service} started"`));
      expect(started, `${service} logged that it started:\n${children.get(service)!.output.join("").slice(-1500)}`).toBeDefined();
      expect(JSON.parse(started!) as { codeCache?: string }, `${service}'s code came from the cache`).toMatchObject({ codeCache: "used" });
    }
  });

  it("ran every service as a non-root user that cannot write the tree", () => {
    for (const [service, { child }] of children) expect(child.exitCode, `${service} still running`).toBeNull();
    if (RUN_AS.uid !== undefined) {
      const probe = spawnSync("sh", ["-c", `touch ${join(tree, "services/web-gateway/ui/dist/x")}`], { ...RUN_AS, encoding: "utf8" });
      expect(probe.status, "the tree is not writable for the service user").not.toBe(0);
    }
  });
});
