// What an operator reaches for after the install: extra volumes, mounts and env on every
// service (prompt files), the image pinned by digest, the `helm test` hook, KEDA scaling on
// work-queue depth, and the umbrella chart's lock file.

import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { validateManifest } from "./k8s-schema.ts";
import { byKind, containersOf, envOf, findOne, podTemplates } from "./manifests.ts";
import { chartDir, helm, HelmError, renderChart, repoRoot } from "./render.ts";

const SERVICES = [
  ["agent-reducer", "agentReducer"],
  ["llm-driver", "llmDriver"],
  ["capability-host", "capabilityHost"],
  ["web-gateway", "webGateway"],
] as const;

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe("extraVolumes, extraVolumeMounts and extraEnv on every service", () => {
  it.each(SERVICES)("%s mounts a prompt-file ConfigMap and gets the env naming it", async (service, key) => {
    const manifests = await renderChart({
      set: {
        [`${key}.extraVolumes[0].name`]: "prompts",
        [`${key}.extraVolumes[0].configMap.name`]: "project-prompts",
        [`${key}.extraVolumeMounts[0].name`]: "prompts",
        [`${key}.extraVolumeMounts[0].mountPath`]: "/etc/agentrt/prompts",
        [`${key}.extraVolumeMounts[0].readOnly`]: "true",
        [`${key}.extraEnv[0].name`]: "LOG_LEVEL_EXTRA",
        [`${key}.extraEnv[0].value`]: "x",
      },
    });
    for (const m of manifests) validateManifest(m);
    const pod = findOne(podTemplates(manifests), (p) => p.component === service);
    const container = containersOf(pod)[0]!;
    expect(pod.spec.volumes?.find((v) => v.name === "prompts")?.configMap?.name).toBe("project-prompts");
    expect(container.volumeMounts?.find((m) => m.name === "prompts")).toEqual({ name: "prompts", mountPath: "/etc/agentrt/prompts", readOnly: true });
    expect(container.volumeMounts?.find((m) => m.mountPath === "/tmp"), "the writable /tmp stays").toBeDefined();
    expect(envOf(container).get("LOG_LEVEL_EXTRA")?.value).toBe("x");
    const others = podTemplates(manifests).filter((p) => p.component !== service && p.component !== "nats");
    for (const other of others) expect(other.spec.volumes?.some((v) => v.name === "prompts"), other.owner).toBe(false);
  });
});

describe("image reference", () => {
  it("pins the image by digest when image.digest is set", async () => {
    const digest = `sha256:${"a".repeat(64)}`;
    const manifests = await renderChart({ set: { "image.tag": "1.2.3", "image.digest": digest } });
    for (const pod of podTemplates(manifests).filter((p) => p.component !== "nats")) {
      expect(containersOf(pod)[0]!.image).toBe(`ghcr.io/agentrt/agentrt:1.2.3@${digest}`);
    }
  });
});

describe("values that would render a broken install are refused, naming them", () => {
  it.each([
    [{ "webGateway.httpPort": "9464" }, /webGateway\.httpPort \(9464\), webGateway\.grpcPort \(8081\) and config\.opsPort \(9464\) must differ/],
    [{ "webGateway.grpcPort": "8080" }, /webGateway\.httpPort \(8080\), webGateway\.grpcPort \(8080\) and config\.opsPort \(9464\) must differ/],
    [{ "nats.embedded.lameDuckDuration": "90s" }, /nats\.embedded\.lameDuckDuration \(90s\) must be shorter than nats\.embedded\.terminationGracePeriodSeconds \(60 s\)/],
    [{ "nats.embedded.lameDuckDuration": "2m" }, /lameDuckDuration \(2m\) must be shorter/],
    [{ "webGateway.shutdownDelaySeconds": "400" }, /\/webGateway\/shutdownDelaySeconds': maximum: got 400, want 300/],
  ])("%o", async (set, message) => {
    const failure = await failureOf(renderChart({ set }));
    expect(failure).toBeInstanceOf(HelmError);
    expect((failure as HelmError).message).toMatch(message);
  });

  it("while the values beside those bounds render", async () => {
    await renderChart({ set: { "nats.embedded.lameDuckDuration": "59s", "webGateway.shutdownDelaySeconds": "300", "webGateway.grpcPort": "9090" } });
  });
});

describe("a gateway Service outside the cluster", () => {
  it("warns in the install notes when its NetworkPolicy admits no client addresses, and not once one is listed", async () => {
    const notes = async (...set: string[]) => {
      const out = await helm(["install", "rt", chartDir, "-n", "agents", "--dry-run=client", "--set", "webGateway.service.type=LoadBalancer", ...set.flatMap((s) => ["--set", s])]);
      return out.slice(out.indexOf("NOTES:"));
    };
    expect(await notes()).toMatch(/WARNING: the gateway Service is a LoadBalancer, but its NetworkPolicy admits only\nnetworkPolicy.gatewayIngressPeers/);
    expect(await notes("networkPolicy.gatewayIngressPeers[0].ipBlock.cidr=203.0.113.0/24")).not.toContain("WARNING: the gateway Service");
  });

  it("suggests a --set-json that keeps the peers there are, adds the clients' and renders without the warning", async () => {
    const base = ["install", "rt", chartDir, "-n", "agents", "--dry-run=client", "--set", "webGateway.service.type=LoadBalancer"];
    const warned = await helm(base);
    const suggested = /--set-json '([^'=]+)=([^']+)'/.exec(warned.slice(warned.indexOf("NOTES:")));
    expect(suggested?.[1]).toBe("networkPolicy.gatewayIngressPeers");
    const defaults = YAML.parse(readFileSync(join(chartDir, "values.yaml"), "utf8")) as { networkPolicy: { gatewayIngressPeers: unknown[] } };
    expect(JSON.parse(suggested![2]!)).toEqual([...defaults.networkPolicy.gatewayIngressPeers, { ipBlock: { cidr: "203.0.113.0/24" } }]);
    const out = await helm([...base, "--set-json", `${suggested![1]}=${suggested![2]}`]);
    expect(out.slice(out.indexOf("NOTES:"))).not.toContain("WARNING: the gateway Service");
  });
});

describe("security opt-outs in the install notes", () => {
  const notes = async (...set: string[]) => {
    const out = await helm(["install", "rt", chartDir, "-n", "agents", "--dry-run=client", ...set.flatMap((s) => ["--set", s])]);
    return out.slice(out.indexOf("NOTES:"));
  };

  it("given a default install, when its notes print, then none of the opt-out warnings is there", async () => {
    const printed = await notes();
    for (const opted of ["the Ingress has no TLS", "nats.auth.enabled=false", "eventSigning.enabled=false", "networkPolicy.enabled=false"]) expect(printed).not.toContain(opted);
  });

  it("given an Ingress without TLS, NATS without users, unsigned events or no NetworkPolicy, when installed, then the notes warn of each, saying what it exposes", async () => {
    const printed = await notes("webGateway.ingress.enabled=true", "nats.auth.enabled=false", "eventSigning.enabled=false", "networkPolicy.enabled=false");
    expect(printed).toMatch(/WARNING: the Ingress has no TLS \(webGateway.ingress.tls\): API keys cross the network in clear text,\nand a browser's live stream carries its key in the URL \(\?apiKey=\)/);
    expect(printed).toContain("WARNING: nats.auth.enabled=false: the built-in NATS takes clients without a user");
    expect(printed).toContain("WARNING: eventSigning.enabled=false: records are not signed");
    expect(printed).toContain("WARNING: networkPolicy.enabled=false: the capability host, which runs model-written code, may\nreach any address");
    expect(await notes("webGateway.ingress.enabled=true", "webGateway.ingress.tls[0].secretName=tls", "webGateway.ingress.tls[0].hosts[0]=agentrt.example.com")).not.toContain("the Ingress has no TLS");
  });
});

describe("releasing a new runtime version", () => {
  it("rolls the services but not the built-in NATS cluster: its pod template names no runtime version", async () => {
    const natsPod = async (tag: string) => {
      const sts = findOne(byKind(await renderChart({ set: { "image.tag": tag } }), "StatefulSet"), (s) => s.metadata.name === "rt-agentrt-nats") as unknown as { spec: { template: unknown } };
      return sts.spec.template;
    };
    const gatewayPod = async (tag: string) => findOne(podTemplates(await renderChart({ set: { "image.tag": tag } })), (p) => p.component === "web-gateway");
    expect(await natsPod("0.2.0")).toEqual(await natsPod("0.3.0"));
    expect(JSON.stringify(await gatewayPod("0.2.0"))).not.toBe(JSON.stringify(await gatewayPod("0.3.0")));
  });
});

describe("helm test hook", () => {
  it("is off by default and needs a Secret with a presented API key when on", async () => {
    expect(byKind(await renderChart(), "Pod")).toEqual([]);
    const failure = await failureOf(renderChart({ set: { "helmTest.enabled": "true" } }));
    expect(failure).toBeInstanceOf(HelmError);
    expect((failure as HelmError).message).toMatch(/helmTest\.apiKeySecret\.name is required/);
  });

  it("runs the image's smoke-turn client against the gateway Service with the key from the Secret", async () => {
    const manifests = await renderChart({ set: { "helmTest.enabled": "true", "helmTest.apiKeySecret.name": "agentrt-admin-key", "webGateway.service.httpPort": "8088" } });
    const pod = findOne(byKind(manifests, "Pod"), () => true);
    validateManifest(pod);
    expect(pod.metadata.annotations?.["helm.sh/hook"]).toBe("test");
    const spec = pod.spec as { restartPolicy: string; containers: Array<{ command: string[]; image: string; workingDir: string; env: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>; securityContext: { readOnlyRootFilesystem: boolean } }> };
    expect(spec.restartPolicy).toBe("Never");
    const [container] = spec.containers;
    expect(container!.command).toEqual(["node", "bin/smoke-turn.mjs"]);
    expect(container!.workingDir).toBe("/app");
    expect(container!.securityContext.readOnlyRootFilesystem).toBe(true);
    const env = new Map(container!.env.map((e) => [e.name, e]));
    expect(env.get("AGENTRT_URL")?.value).toBe("http://rt-agentrt-web-gateway.agents.svc.cluster.local:8088");
    expect(env.get("AGENTRT_API_KEY")?.valueFrom?.secretKeyRef).toEqual({ name: "agentrt-admin-key", key: "api-key" });
    const service = findOne(byKind(manifests, "Service"), (s) => s.metadata.name === "rt-agentrt-web-gateway");
    expect((service.spec as { ports: Array<{ name: string; port: number }> }).ports.find((p) => p.name === "http")?.port).toBe(8088);
  });
});

describe("KEDA ScaledObject on work-queue depth", () => {
  it("is off by default", async () => {
    expect(byKind(await renderChart(), "ScaledObject")).toEqual([]);
  });

  it.each([
    ["llm-driver", "llmDriver", "AGENT_WORK_LLM"],
    ["capability-host", "capabilityHost", "AGENT_WORK_SCRIPT"],
  ])("%s scales on its own work-queue consumer in place of the CPU HPA", async (service, key, stream) => {
    const manifests = await renderChart({ set: { [`${key}.keda.enabled`]: "true", [`${key}.autoscaling.enabled`]: "false", [`${key}.keda.lagThreshold`]: "7" } });
    const scaled = findOne(byKind(manifests, "ScaledObject"), () => true);
    validateManifest(scaled);
    const spec = scaled.spec as { scaleTargetRef: { name: string }; triggers: Array<{ type: string; metadata: Record<string, string> }> };
    expect(spec.scaleTargetRef.name).toBe(`rt-agentrt-${service}`);
    expect(spec.triggers[0]).toEqual({
      type: "nats-jetstream",
      metadata: { natsServerMonitoringEndpoint: "rt-agentrt-nats.agents.svc.cluster.local:8222", account: "$G", stream, consumer: service, lagThreshold: "7" },
    });
    const deployment = findOne(byKind(manifests, "Deployment"), (d) => d.metadata.name === `rt-agentrt-${service}`);
    expect((deployment.spec as { replicas?: number }).replicas, "replicas left to KEDA").toBeUndefined();
    expect(byKind(manifests, "HorizontalPodAutoscaler").map((h) => h.metadata.name)).not.toContain(`rt-agentrt-${service}`);
  });

  it("refuses KEDA beside the CPU HPA, and without a monitoring endpoint on an external NATS", async () => {
    const both = await failureOf(renderChart({ set: { "llmDriver.keda.enabled": "true" } }));
    expect((both as HelmError).message).toMatch(/llmDriver\.keda\.enabled and llmDriver\.autoscaling\.enabled are both on/);
    const external = await failureOf(
      renderChart({ valuesFiles: [join(chartDir, "values-external-nats.yaml")], set: { "capabilityHost.keda.enabled": "true", "capabilityHost.autoscaling.enabled": "false" } }),
    );
    expect((external as HelmError).message).toMatch(/capabilityHost\.keda\.natsMonitoringEndpoint is required/);
  });

  it("names the durable consumers the services really use", () => {
    expect(readFileSync(join(repoRoot, "services/llm-driver/src/driver.ts"), "utf8")).toMatch(/LLM_DRIVER_DURABLE = "llm-driver"/);
    expect(readFileSync(join(repoRoot, "services/capability-host/src/capability-host.ts"), "utf8")).toMatch(/durable: "capability-host"/);
  });
});

describe("umbrella chart lock", () => {
  it("commits Chart.lock with the dependencies Chart.yaml declares", () => {
    const umbrella = join(repoRoot, "deploy/helm/agentrt-with-nats");
    expect(existsSync(join(umbrella, "Chart.lock"))).toBe(true);
    expect(readFileSync(join(umbrella, ".gitignore"), "utf8")).not.toMatch(/^Chart\.lock$/m);
    const chart = YAML.parse(readFileSync(join(umbrella, "Chart.yaml"), "utf8")) as { dependencies: Array<{ name: string; repository: string }> };
    const lock = YAML.parse(readFileSync(join(umbrella, "Chart.lock"), "utf8")) as { dependencies: Array<{ name: string; repository: string; version: string }>; digest: string };
    expect(lock.dependencies.map((d) => [d.name, d.repository])).toEqual(chart.dependencies.map((d) => [d.name, d.repository]));
    for (const d of lock.dependencies) expect(d.version, `${d.name} is locked to one version`).toMatch(/^\d+\.\d+\.\d+$/);
    expect(lock.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});

describe("umbrella chart: lock digest and notes", () => {
  const umbrella = join(repoRoot, "deploy/helm/agentrt-with-nats");

  it("helm accepts the committed Chart.lock as in sync with Chart.yaml (and refuses a tampered one)", async () => {
    const work = mkdtempSync(join(tmpdir(), "agentrt-lock-"));
    try {
      cpSync(umbrella, join(work, "agentrt-with-nats"), { recursive: true, filter: (src) => !src.includes(`${umbrella}/charts`) });
      cpSync(chartDir, join(work, "agentrt"), { recursive: true });
      // Offline, the build stops at the NATS repository, after the lock's digest was checked.
      const inSync = await failureOf(helm(["dependency", "build", join(work, "agentrt-with-nats")]));
      expect((inSync as HelmError).message).not.toMatch(/out of sync/);
      expect((inSync as HelmError).message).toMatch(/nats-io\.github\.io/);
      const lockFile = join(work, "agentrt-with-nats", "Chart.lock");
      writeFileSync(lockFile, readFileSync(lockFile, "utf8").replace(/version: 1\.\d+\.\d+/, "version: 1.0.0"));
      const tampered = await failureOf(helm(["dependency", "build", join(work, "agentrt-with-nats")]));
      expect((tampered as HelmError).message).toMatch(/out of sync/);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it("prints the agentrt chart's notes (helm shows only the top chart's NOTES.txt)", async () => {
    const work = mkdtempSync(join(tmpdir(), "agentrt-notes-"));
    try {
      cpSync(umbrella, join(work, "chart"), { recursive: true, filter: (src) => !src.includes(`${umbrella}/charts`) && !src.endsWith("Chart.lock") });
      const chartYaml = YAML.parse(readFileSync(join(work, "chart", "Chart.yaml"), "utf8")) as { dependencies: Array<{ name: string }> };
      chartYaml.dependencies = chartYaml.dependencies.filter((d) => d.name === "agentrt");
      writeFileSync(join(work, "chart", "Chart.yaml"), YAML.stringify(chartYaml));
      cpSync(chartDir, join(work, "chart", "charts", "agentrt"), { recursive: true });
      const out = await helm(["install", "rt", join(work, "chart"), "-n", "agents", "--dry-run=client", "--set", "nats.enabled=false"]);
      const notes = out.slice(out.indexOf("NOTES:"));
      expect(notes).toMatch(/agentrt 0\.1\.0 is installed as "rt" in namespace agents/);
      expect(notes).toMatch(/NATS: external \(nats:\/\/agentrt-nats:4222\)/);
      expect(notes).toMatch(/port-forward svc\/rt-agentrt-web-gateway/);
      expect(notes).toMatch(/the official NATS chart \(3 nodes/);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
