// The built-in NATS nodes' routes authenticate. A route bypasses every user's permissions (a
// node sees every subject and every stream), so before this any pod that could reach port 6222
// could join the cluster as a node and read or write everything; only the NetworkPolicy stood
// in the way, and not every CNI enforces one. Here the chart's own nats.conf and env, as the
// kubelet would expand them, run as three real nats-servers on loopback.

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freeLoopbackPorts, natsServerBinary, registerChild, unregisterChild, waitFor } from "@agentrt/testing";
import { afterEach, describe, expect, it } from "vitest";
import type { Manifest } from "./k8s-schema.ts";
import { byKind, containersOf, envOf, findOne, podTemplates } from "./manifests.ts";
import { renderChart } from "./render.ts";

const NODES = 3;
const natsName = "rt-agentrt-nats";
const hostOf = (i: number) => `${natsName}-${i}.${natsName}-headless.agents.svc.cluster.local:6222`;

const natsConf = (manifests: readonly Manifest[]): string =>
  (findOne(byKind(manifests, "ConfigMap"), (c) => c.metadata.name === `${natsName}-config`).data as Record<string, string>)["nats.conf"]!;

function secretValue(manifests: readonly Manifest[], name: string, key: string): string {
  const secret = findOne(byKind(manifests, "Secret"), (s) => s.metadata.name === name) as Manifest & { data: Record<string, string> };
  return Buffer.from(secret.data[key]!, "base64").toString();
}

/** The NATS container's env for pod `i`, as the kubelet resolves it: Secret keys read, `$(VAR)` expanded. */
function nodeEnv(manifests: readonly Manifest[], i: number): Record<string, string> {
  const pod = findOne(podTemplates(manifests), (p) => p.component === "nats");
  const env: Record<string, string> = {};
  for (const [name, entry] of envOf(findOne(containersOf(pod), (c) => c.name === "nats"))) {
    if (entry.valueFrom?.fieldRef?.fieldPath === "metadata.name") env[name] = `${natsName}-${i}`;
    else if (entry.valueFrom?.secretKeyRef !== undefined) env[name] = secretValue(manifests, entry.valueFrom.secretKeyRef.name ?? "", entry.valueFrom.secretKeyRef.key);
    else if (entry.value !== undefined) env[name] = entry.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (_, ref: string) => env[ref] ?? `$(${ref})`);
  }
  return env;
}

interface Node {
  readonly child: ChildProcess;
  /** Its config, store and pid file: a restarted node keeps its store, as a pod keeps its claim. */
  readonly dir: string;
  readonly monitorPort: number;
  readonly log: string[];
}

const started: Node[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const node of started.splice(0)) await stop(node);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Ports {
  readonly client: number;
  readonly monitor: number;
  readonly route: number;
}

/**
 * Runs a nats-server on `conf` as the chart renders it, moved to loopback: its listeners on
 * `ports[i]`, each route's DNS name `hostOf(j)` resolved to `ports[j].route`.
 */
function runNode(conf: string, env: Record<string, string>, ports: readonly Ports[], i: number, dir = mkdtempSync(join(tmpdir(), "agentrt-nats-route-"))): Node {
  if (!dirs.includes(dir)) dirs.push(dir);
  const own = ports[i]!;
  const local = (text: string) => ports.reduce((t, p, j) => t.replaceAll(hostOf(j), `127.0.0.1:${p.route}`), text);
  const file = join(dir, "nats.conf");
  writeFileSync(
    file,
    local(conf)
      .replace('listen: "0.0.0.0:4222"', `listen: "127.0.0.1:${own.client}"`)
      .replace('http: "0.0.0.0:8222"', `http: "127.0.0.1:${own.monitor}"`)
      .replace('listen: "0.0.0.0:6222"', `listen: "127.0.0.1:${own.route}"`)
      .replace('store_dir: "/data"', `store_dir: ${JSON.stringify(join(dir, "js"))}`)
      .replace('pid_file: "/var/run/nats/nats.pid"', `pid_file: ${JSON.stringify(join(dir, "nats.pid"))}`),
  );
  const localEnv = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, local(v)]));
  const child = spawn(natsServerBinary() ?? "nats-server", ["-c", file], { cwd: dir, env: { ...process.env, ...localEnv }, stdio: ["ignore", "pipe", "pipe"] });
  registerChild(child);
  const log: string[] = [];
  child.stdout?.on("data", (chunk: Buffer) => log.push(chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => log.push(chunk.toString()));
  const node = { child, dir, monitorPort: own.monitor, log };
  started.push(node);
  return node;
}

async function stop(node: Node): Promise<void> {
  if (node.child.exitCode === null && node.child.signalCode === null) {
    const exited = new Promise((resolve) => node.child.once("exit", resolve));
    node.child.kill("SIGKILL");
    await exited;
  }
  unregisterChild(node.child);
}

async function monitor<T>(node: Node, path: string): Promise<T | undefined> {
  const response = await fetch(`http://127.0.0.1:${node.monitorPort}${path}`).catch(() => undefined);
  return response?.ok === true ? ((await response.json()) as T) : undefined;
}

const routeCount = async (node: Node) => (await monitor<{ num_routes: number }>(node, "/routez"))?.num_routes;

/** Every node routed to every other and JetStream's meta group formed (a leader needs a majority). */
async function clusterFormed(nodes: readonly Node[], what: string): Promise<void> {
  await waitFor(
    async () => {
      for (const node of nodes) {
        if ((await routeCount(node)) !== nodes.length - 1) return false;
        const jsz = await monitor<{ meta_cluster?: { leader?: string; cluster_size?: number } }>(node, "/jsz");
        if (jsz?.meta_cluster?.leader === undefined || jsz.meta_cluster.leader === "") return false;
      }
      return true;
    },
    { timeoutMs: 30_000, intervalMs: 100, what: `${what}: every node routed and a meta leader elected\n${nodes.map((n) => n.log.join("").slice(-1500)).join("\n---\n")}` },
  );
}

async function portsFor(count: number): Promise<Ports[]> {
  const ports = await freeLoopbackPorts(count * 3);
  return Array.from({ length: count }, (_, i) => ({ client: ports[3 * i]!, monitor: ports[3 * i + 1]!, route: ports[3 * i + 2]! }));
}

describe("the built-in NATS nodes' routes", () => {
  it("carry a generated password that starts with a letter; one node has no routes and no route Secret; an existing Secret is used as it is", async () => {
    const manifests = await renderChart();
    expect(secretValue(manifests, `${natsName}-routes`, "password")).toMatch(/^[A-Za-z][A-Za-z0-9]{31}$/);
    expect(natsConf(manifests)).toMatch(/authorization \{\s+user: "route"\s+password: \$AGENTRT_NATS_ROUTE_PASSWORD/);
    const env = nodeEnv(manifests, 0);
    expect(env.AGENTRT_NATS_ROUTE_1).toBe(`nats://route:${env.AGENTRT_NATS_ROUTE_PASSWORD}@${hostOf(1)}`);

    const single = await renderChart({ set: { "nats.embedded.replicas": "1", "config.natsStreamReplicas": "1" } });
    expect(byKind(single, "Secret").map((s) => s.metadata.name)).not.toContain(`${natsName}-routes`);
    expect(natsConf(single)).not.toContain("cluster {");
    expect(Object.keys(nodeEnv(single, 0)).filter((name) => name.startsWith("AGENTRT_NATS_ROUTE"))).toEqual([]);

    const own = await renderChart({ set: { "nats.embedded.routes.existingSecret": "my-routes" } });
    expect(byKind(own, "Secret").map((s) => s.metadata.name)).not.toContain(`${natsName}-routes`);
    const pod = findOne(podTemplates(own), (p) => p.component === "nats");
    const passwordEnv = envOf(findOne(containersOf(pod), (c) => c.name === "nats")).get("AGENTRT_NATS_ROUTE_PASSWORD");
    expect(passwordEnv?.valueFrom?.secretKeyRef).toEqual({ name: "my-routes", key: "password" });
  });

  it("form the cluster with the password, and refuse a server that routes in without it or with another", async () => {
    // Given the chart's three nodes running its config and env
    const manifests = await renderChart();
    const conf = natsConf(manifests);
    const ports = await portsFor(NODES + 2);
    const nodes = Array.from({ length: NODES }, (_, i) => runNode(conf, nodeEnv(manifests, i), ports, i));
    // Then they form the cluster
    await clusterFormed(nodes, "the chart's nodes");
    // When a server that is not one of them routes to the first node, without the password and with a wrong one
    const rogue = (i: number, url: string) =>
      runNode(`server_name: rogue-${i}\nlisten: "0.0.0.0:4222"\nhttp: "0.0.0.0:8222"\ncluster {\n  name: "${natsName}"\n  listen: "0.0.0.0:6222"\n  routes: [${JSON.stringify(url)}]\n}\n`, {}, ports, i);
    const intruders = [rogue(NODES, `nats://127.0.0.1:${ports[0]!.route}`), rogue(NODES + 1, `nats://route:notThePassword@127.0.0.1:${ports[0]!.route}`)];
    // Then the node refuses both, for good, and they see no route
    await waitFor(() => (nodes[0]!.log.join("").match(/Router connection closed: Authentication Failure/g)?.length ?? 0) >= 4, { timeoutMs: 15_000, what: "two refusals of each intruder" });
    for (const intruder of intruders) expect(await routeCount(intruder)).toBe(0);
    for (const node of nodes) expect(await routeCount(node)).toBe(NODES - 1);
  }, 90_000);

  it("roll in over an earlier cluster whose routes had no password, one node at a time", async () => {
    // Given the three nodes running the earlier chart's config: plain route URLs, no route authorization
    const manifests = await renderChart();
    const conf = natsConf(manifests);
    const earlier = conf
      .replace(/\n *# A node joins only with the route password[^\n]*\n[^\n]*\n *authorization \{[^}]*\}/, "")
      .replace(/\$AGENTRT_NATS_ROUTE_(\d)/g, (_, i: string) => JSON.stringify(`nats://${hostOf(Number(i))}`));
    expect(earlier).not.toContain("authorization {\n    user: \"route\"");
    const ports = await portsFor(NODES);
    const nodes = Array.from({ length: NODES }, (_, i) => runNode(earlier, nodeEnv(manifests, i), ports, i));
    await clusterFormed(nodes, "the earlier nodes");
    // When each node in turn is restarted with this chart's config (the StatefulSet's rolling update, from the last ordinal)
    for (const i of [2, 1, 0]) {
      await stop(nodes[i]!);
      started.splice(started.indexOf(nodes[i]!), 1);
      nodes[i] = runNode(conf, nodeEnv(manifests, i), ports, i, nodes[i]!.dir);
      // Then after every step all three are routed to each other with a meta leader
      await clusterFormed(nodes, `after node ${i} rolled`);
    }
  }, 180_000);
});
