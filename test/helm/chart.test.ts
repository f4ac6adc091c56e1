// CI for deploy/helm: `helm lint` and `helm template` for the default values and every shipped
// values file, every rendered manifest validated against the Kubernetes schemas, and the facts
// the runtime depends on asserted (four services, HPAs for the stateless three, PDBs, probes,
// secrets only by reference, the built-in NATS config accepted by a real nats-server).

import { NATS_SERVICE_USERS, natsPasswordEnvName } from "@agentrt/service-kit";
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { validateManifest, type Manifest } from "./k8s-schema.ts";
import { chartDir, helm, HelmError, renderChart, repoRoot } from "./render.ts";
import { valuesSchemaJson } from "./values-schema.ts";
import { renderValuesTable, UndocumentedValueError, withValuesTable } from "./values-table.ts";
import {
  byKind,
  containersOf,
  envOf,
  findOne,
  labelSelectorMatches,
  peerAdmitsPod,
  podTemplates,
  selectorMatches,
  type LabelSelector,
  type NetworkPolicyPeer,
  type PodTemplate,
} from "./manifests.ts";

const SERVICES = ["agent-reducer", "llm-driver", "capability-host", "web-gateway"] as const;
const AUTOSCALED = ["llm-driver", "capability-host", "web-gateway"];
const umbrellaDir = join(repoRoot, "deploy/helm/agentrt-with-nats");
const valuesFiles = readdirSync(chartDir)
  .filter((name) => /^values-.+\.yaml$/.test(name))
  .map((name) => join(chartDir, name));
/** [label, values files]: the defaults alone, then each shipped values-*.yaml on top. */
const valuesCases: Array<[string, string[]]> = [["values.yaml (default)", []], ...valuesFiles.map((f): [string, string[]] => [f.slice(chartDir.length + 1), [f]])];

describe("helm lint", () => {
  it.each(valuesCases)(
    "passes --strict with %s",
    { concurrent: true },
    async (_name, files) => {
      const out = await helm(["lint", "--strict", chartDir, ...files.flatMap((f) => ["--values", f])]);
      expect(out).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    },
  );
});

describe("helm template validates against the Kubernetes schemas", () => {
  it("ships the external-NATS values file", () => {
    expect(valuesFiles.map((f) => f.slice(chartDir.length + 1))).toContain("values-external-nats.yaml");
  });

  it.each(valuesCases)(
    "every manifest rendered with %s is schema-valid",
    async (_name, files) => {
      const manifests = await renderChart({ valuesFiles: files });
      expect(manifests.length).toBeGreaterThan(10);
      for (const manifest of manifests) validateManifest(manifest);
    },
  );

  it("rejects a misspelt field and an unknown kind (the validator can fail)", () => {
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "x" },
      spec: {
        selector: { matchLabels: { a: "b" } },
        template: { metadata: { labels: { a: "b" } }, spec: { containers: [{ name: "c", image: "i", readinesProbe: {} }] } },
      },
    };
    expect(() => validateManifest(deployment)).toThrow(/unknown field \/spec\/template\/spec\/containers\/0\/readinesProbe/);
    expect(() => validateManifest({ ...deployment, spec: { ...deployment.spec, replicas: "two" } })).toThrow(/replicas must be integer/);
    expect(() => validateManifest({ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } })).toThrow(/no schema registered for example.com\/v1\/Widget/);
  });
});

describe("default values: built-in 3-node NATS", () => {
  let manifests: Manifest[];
  let pods: PodTemplate[];
  beforeAll(async () => {
    manifests = await renderChart();
    pods = podTemplates(manifests);
  });

  it("runs the four services as their own Deployments from one image with a command each", () => {
    const deployments = byKind(manifests, "Deployment");
    expect(deployments.map((d) => d.metadata.labels?.["app.kubernetes.io/component"]).sort()).toEqual([...SERVICES].sort());
    for (const service of SERVICES) {
      const [container, ...others] = containersOf(findOne(pods, (p) => p.component === service));
      expect(others).toEqual([]);
      expect(container?.image).toBe("ghcr.io/agentrt/agentrt:0.1.0");
      expect(container?.command, "compiled entry point, no TypeScript loader").toEqual(["node", `services/${service}/dist/main.mjs`]);
    }
  });

  it("autoscales exactly llm-driver, capability-host and web-gateway; the reducer has a fixed replica count", () => {
    const hpas = byKind(manifests, "HorizontalPodAutoscaler");
    const deploymentNames = new Set(byKind(manifests, "Deployment").map((d) => d.metadata.name));
    const targets = hpas.map((h) => (h.spec as { scaleTargetRef: { kind: string; name: string } }).scaleTargetRef);
    expect(targets.map((t) => t.name).sort()).toEqual(AUTOSCALED.map((s) => `rt-agentrt-${s}`).sort());
    for (const target of targets) {
      expect(target.kind).toBe("Deployment");
      expect(deploymentNames.has(target.name)).toBe(true);
    }
    const reducer = findOne(byKind(manifests, "Deployment"), (d) => d.metadata.name === "rt-agentrt-agent-reducer");
    expect((reducer.spec as { replicas?: number }).replicas).toBe(2);
    for (const name of AUTOSCALED) {
      const deployment = findOne(byKind(manifests, "Deployment"), (d) => d.metadata.name === `rt-agentrt-${name}`);
      expect((deployment.spec as { replicas?: number }).replicas, `${name} leaves replicas to its HPA`).toBeUndefined();
    }
  });

  it("guards every workload with a PodDisruptionBudget that selects its pods", () => {
    const pdbs = byKind(manifests, "PodDisruptionBudget");
    for (const pod of pods) {
      const guarding = pdbs.filter((pdb) => selectorMatches((pdb.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels, pod.labels));
      expect(guarding.map((p) => p.metadata.name), `PDB for ${pod.owner}`).toHaveLength(1);
    }
    expect(pods.map((p) => p.component).sort()).toEqual([...SERVICES, "nats"].sort());
  });

  it("probes every container on a port it declares, and services on /healthz and /readyz", () => {
    const containers = pods.flatMap((pod) => containersOf(pod).map((c) => ({ pod, c })));
    expect(containers).toHaveLength(5);
    for (const { pod, c } of containers) {
      const portNames = new Set((c.ports ?? []).map((p) => p.name));
      for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
        expect(probe?.httpGet, `${pod.owner}/${c.name} probe`).toBeDefined();
        expect(portNames.has(String(probe?.httpGet?.port)), `${pod.owner}/${c.name} probes a declared port`).toBe(true);
      }
      if (pod.component !== "nats") {
        expect(c.livenessProbe?.httpGet?.path).toBe("/healthz");
        expect(c.readinessProbe?.httpGet?.path).toBe("/readyz");
        expect(c.ports?.find((p) => p.name === "ops")?.containerPort).toBe(9464);
        expect(envOf(c).get("OPS_PORT")?.value).toBe("9464");
      }
    }
  });

  it("sets requests, limits and a non-root read-only security context everywhere", () => {
    const account = findOne(byKind(manifests, "ServiceAccount"), () => true);
    expect(account.automountServiceAccountToken).toBe(false);
    for (const pod of pods) {
      expect(pod.spec.serviceAccountName, pod.owner).toBe(account.metadata.name);
      expect(pod.spec.securityContext?.runAsNonRoot, pod.owner).toBe(true);
      expect(pod.spec.automountServiceAccountToken, pod.owner).toBe(false);
      for (const c of containersOf(pod)) {
        expect(c.resources?.requests?.cpu, `${pod.owner} cpu request`).toBeDefined();
        expect(c.resources?.requests?.memory, `${pod.owner} memory request`).toBeDefined();
        expect(c.resources?.limits?.memory, `${pod.owner} memory limit`).toBeDefined();
        expect(c.securityContext?.readOnlyRootFilesystem, pod.owner).toBe(true);
        expect(c.securityContext?.allowPrivilegeEscalation, pod.owner).toBe(false);
      }
    }
  });

  it("gives every service the shared env and points NATS_URL at the built-in cluster's Service", () => {
    const natsService = findOne(byKind(manifests, "Service"), (s) => s.metadata.name === "rt-agentrt-nats");
    expect((natsService.spec as { ports: Array<{ port: number }> }).ports.map((p) => p.port)).toContain(4222);
    for (const service of SERVICES) {
      const env = envOf(containersOf(findOne(pods, (p) => p.component === service))[0]!);
      expect(env.get("NATS_URL")?.value).toBe("nats://rt-agentrt-nats.agents.svc.cluster.local:4222");
      expect(env.get("PARTITION_COUNT")?.value).toBe("64");
      expect(env.get("NATS_STREAM_REPLICAS")?.value).toBe("3");
      expect(env.get("LOG_LEVEL")?.value).toBe("info");
      // The quotas, set once for the gateway and the host alike (a number over 2^31 printed whole);
      // the reducer and the driver append only the machinery's events, which are never refused.
      if (service !== "web-gateway" && service !== "capability-host") {
        expect(env.has("AGENT_STREAM_QUOTA_BYTES"), service).toBe(false);
        continue;
      }
      expect(["AGENT_STREAM_QUOTA_BYTES", "AGENT_STREAM_QUOTA_EVENTS", "AGENT_TENANT_DEPTH", "AGENT_TENANT_QUOTA_BYTES", "AGENT_TENANT_QUOTA_STREAMS"].map((n) => env.get(n)?.value)).toEqual([
        "1073741824",
        "1000000",
        "2",
        "17179869184",
        "100000",
      ]);
    }
  });

  it("configures each service through the variables its config schema reads", () => {
    const env = (service: string) => envOf(containersOf(findOne(pods, (p) => p.component === service))[0]!);
    const reducer = env("agent-reducer");
    expect(reducer.get("REDUCER_ID")?.valueFrom?.fieldRef?.fieldPath, "lease owner = pod name").toBe("metadata.name");
    expect(reducer.get("REDUCER_LEASE_TTL_MS")?.value).toBe("6000");
    expect(reducer.get("PROJECT_WORKER")?.value).toBe("on");
    const host = env("capability-host");
    expect(["SCRIPT_CONCURRENCY", "SCRIPT_MEMORY_LIMIT_MB", "SCRIPT_MAX_RUN_MS", "SCRIPT_TYPECHECK_BUDGET_MS"].map((n) => host.get(n)?.value)).toEqual(["4", "64", "120000", "2000"]);
    const driver = env("llm-driver");
    expect(driver.get("LLM_CONCURRENCY")?.value).toBe("32");
    // Its slots are shared between tenants as the gateway's and host's quotas count them
    expect(driver.get("AGENT_TENANT_DEPTH")?.value).toBe(host.get("AGENT_TENANT_DEPTH")?.value ?? "missing on the host");
    expect(driver.has("LLM_PROVIDERS"), "no providers configured: offline model unless OPENAI_API_KEY").toBe(false);
  });

  it("exposes the gateway's HTTP and gRPC ports through a Service that selects gateway pods", () => {
    const gateway = findOne(pods, (p) => p.component === "web-gateway");
    const container = containersOf(gateway)[0]!;
    const env = envOf(container);
    expect(env.get("HTTP_PORT")?.value).toBe("8080");
    expect(env.get("GRPC_PORT")?.value).toBe("8081");
    const service = findOne(byKind(manifests, "Service"), (s) => s.metadata.name === "rt-agentrt-web-gateway");
    const spec = service.spec as { selector: Record<string, string>; ports: Array<{ name: string; targetPort: string }> };
    expect(selectorMatches(spec.selector, gateway.labels)).toBe(true);
    expect(spec.ports.map((p) => [p.name, p.targetPort])).toEqual([["http", "http"], ["grpc", "grpc"]]);
    expect(container.ports?.map((p) => [p.name, p.containerPort])).toEqual([["ops", 9464], ["http", 8080], ["grpc", 8081]]);
  });

  it("routes every Service's target ports to named ports of the pods it selects", () => {
    for (const service of byKind(manifests, "Service")) {
      const spec = service.spec as { selector: Record<string, string>; ports: Array<{ targetPort: string }> };
      const selected = pods.filter((p) => selectorMatches(spec.selector, p.labels));
      expect(selected.length, `${service.metadata.name} selects pods`).toBeGreaterThan(0);
      for (const pod of selected) {
        const names = new Set(containersOf(pod).flatMap((c) => (c.ports ?? []).map((p) => p.name)));
        for (const port of spec.ports) expect(names.has(port.targetPort), `${service.metadata.name} → ${pod.owner}:${port.targetPort}`).toBe(true);
      }
    }
  });

  it("mounts the gateway's API keys file from a Secret", () => {
    const gateway = findOne(pods, (p) => p.component === "web-gateway");
    const container = containersOf(gateway)[0]!;
    const keysFile = envOf(container).get("AGENTRT_KEYS_FILE")?.value ?? "";
    expect(keysFile).toMatch(/^\//);
    const mount = container.volumeMounts?.find((m) => keysFile.startsWith(`${m.mountPath}/`));
    expect(mount?.readOnly).toBe(true);
    const volume = gateway.spec.volumes?.find((v) => v.name === mount?.name);
    const secret = findOne(byKind(manifests, "Secret"), (s) => s.metadata.name === volume?.secret?.secretName);
    const file = (secret.stringData as Record<string, string>)[keysFile.slice(mount!.mountPath.length + 1)];
    expect(JSON.parse(file ?? "null")).toEqual({ keys: [] });

    const driver = containersOf(findOne(pods, (p) => p.component === "llm-driver"))[0]!;
    expect(driver.envFrom, "no model key configured: no model Secret").toBeUndefined();
  });

  it("runs 3 JetStream nodes with file storage whose config a real nats-server accepts", async () => {
    const sts = findOne(byKind(manifests, "StatefulSet"), (s) => s.metadata.name === "rt-agentrt-nats");
    const spec = sts.spec as { replicas: number; volumeClaimTemplates: Array<{ spec: { resources: { requests: { storage: string } } } }> };
    expect(spec.replicas).toBe(3);
    expect(spec.volumeClaimTemplates[0]?.spec.resources.requests.storage).toBe("10Gi");
    const conf = (findOne(byKind(manifests, "ConfigMap"), (c) => c.metadata.name === "rt-agentrt-nats-config").data as Record<string, string>)["nats.conf"]!;
    expect(conf.match(/\$AGENTRT_NATS_ROUTE_\d/g)).toEqual(["$AGENTRT_NATS_ROUTE_0", "$AGENTRT_NATS_ROUTE_1", "$AGENTRT_NATS_ROUTE_2"]);
    const natsEnv = envOf(findOne(containersOf(findOne(podTemplates(manifests), (p) => p.component === "nats")), (c) => c.name === "nats"));
    for (const i of [0, 1, 2]) {
      expect(natsEnv.get(`AGENTRT_NATS_ROUTE_${i}`)?.value).toBe(`nats://route:$(AGENTRT_NATS_ROUTE_PASSWORD)@rt-agentrt-nats-${i}.rt-agentrt-nats-headless.agents.svc.cluster.local:6222`);
    }
    expect(conf).toMatch(/jetstream \{\s+store_dir: "\/data"/);
    await expect(natsServerAccepts(conf)).resolves.toMatch(/is valid/);
  });
});

describe("default values: who may reach the built-in NATS", () => {
  it("admits clients on 4222 only from the four service pods, routes on 6222 only between NATS pods, monitoring only from scrapers", async () => {
    const manifests = await renderChart();
    const pods = podTemplates(manifests);
    const policy = findOne(byKind(manifests, "NetworkPolicy"), (p) => p.metadata.name === "rt-agentrt-nats");
    const spec = policy.spec as { podSelector: LabelSelector; ingress: Array<{ ports: Array<{ port: string }>; from?: NetworkPolicyPeer[] }> };
    expect(pods.filter((p) => labelSelectorMatches(spec.podSelector, p.labels)).map((p) => p.component)).toEqual(["nats"]);
    const rule = (port: string) => findOne(spec.ingress, (r) => r.ports.some((p) => p.port === port));
    const admitted = (port: string, labels: Record<string, string>, namespaceLabels: Record<string, string> = { "kubernetes.io/metadata.name": "agents" }, sameNamespace = true) =>
      (rule(port).from ?? []).some((peer) => peerAdmitsPod(peer, { labels, namespaceLabels, sameNamespace }));
    for (const pod of pods) {
      expect(admitted("client", pod.labels), `${pod.owner} → 4222`).toBe(pod.component !== "nats");
      expect(admitted("cluster", pod.labels), `${pod.owner} → 6222`).toBe(pod.component === "nats");
      expect(admitted("monitor", pod.labels), `${pod.owner} → 8222`).toBe(false);
    }
    const release = pods.find((p) => p.component === "web-gateway")!.labels;
    expect(admitted("client", { ...release, "app.kubernetes.io/component": "helm-test" }), "another pod of the release").toBe(false);
    expect(admitted("client", { "agentrt.io/nats-client": "true" }), "a label alone grants nothing").toBe(false);
    expect(admitted("client", { app: "something-else" })).toBe(false);
    expect(admitted("monitor", { app: "prometheus" }, { "kubernetes.io/metadata.name": "monitoring" }, false), "scrapers in the monitoring namespace").toBe(true);
    expect(admitted("monitor", { app: "anything" }, { "kubernetes.io/metadata.name": "default" }, false)).toBe(false);
  });
});

describe("values-external-nats.yaml", () => {
  let manifests: Manifest[];
  beforeAll(async () => {
    manifests = await renderChart({ valuesFiles: [join(chartDir, "values-external-nats.yaml")], set: { "externalNats.url": "nats://nats.messaging.svc:4222" } });
  });

  it("installs no NATS and points every service at the external URL", () => {
    expect(byKind(manifests, "StatefulSet")).toEqual([]);
    const pods = podTemplates(manifests);
    expect(pods.map((p) => p.component).sort()).toEqual([...SERVICES].sort());
    for (const pod of pods) expect(envOf(containersOf(pod)[0]!).get("NATS_URL")?.value).toBe("nats://nats.messaging.svc:4222");
  });
});

describe("optional features and secrets", () => {
  const modelKey = "sk-test-never-inline-9f2c";
  const storedKey = { id: "k1", salt: "0".repeat(31) + "1", hash: "ab".repeat(32), scopes: [{ prefix: "/", verbs: ["read"] }] };
  let manifests: Manifest[];
  let valuesDir: string;
  afterAll(() => rmSync(valuesDir, { recursive: true, force: true }));
  beforeAll(async () => {
    valuesDir = mkdtempSync(join(tmpdir(), "agentrt-helm-"));
    const values = join(valuesDir, "values.yaml");
    writeFileSync(
      values,
      JSON.stringify({
        llmDriver: { modelKeys: { keys: { OPENAI_API_KEY: modelKey } }, providers: { ollama: { baseUrl: "http://ollama.ai.svc:11434/v1" } }, contextWindows: { "ollama/": 32768 } },
        webGateway: { apiKeys: { keys: [storedKey] }, ingress: { enabled: true, className: "nginx" } },
        capabilityHost: { autoscaling: { enabled: false }, replicaCount: 3 },
        metrics: { serviceMonitor: { enabled: true } },
      }),
    );
    manifests = await renderChart({ valuesFiles: [values] });
  });

  it("renders schema-valid manifests, the Ingress and the ServiceMonitor", () => {
    for (const manifest of manifests) validateManifest(manifest);
    const ingress = findOne(byKind(manifests, "Ingress"), () => true);
    const backend = (ingress.spec as { rules: Array<{ http: { paths: Array<{ backend: { service: { name: string; port: { name: string } } } }> } }> }).rules[0]!.http.paths[0]!.backend.service;
    expect(backend).toEqual({ name: "rt-agentrt-web-gateway", port: { name: "http" } });
    const monitor = findOne(byKind(manifests, "ServiceMonitor"), () => true);
    const selector = (monitor.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    const scraped = byKind(manifests, "Service").filter((s) => selectorMatches(selector, s.metadata.labels ?? {}));
    expect(scraped.map((s) => s.metadata.labels?.["app.kubernetes.io/component"]).sort()).toEqual([...SERVICES].sort());
  });

  it("keeps secret values inside Secret objects and hands them over by reference", () => {
    for (const manifest of manifests.filter((m) => m.kind !== "Secret")) {
      const text = JSON.stringify(manifest);
      expect(text, `${manifest.kind}/${manifest.metadata.name}`).not.toContain(modelKey);
      expect(text, `${manifest.kind}/${manifest.metadata.name}`).not.toContain(storedKey.hash);
    }
    const pods = podTemplates(manifests);
    for (const c of pods.flatMap(containersOf)) {
      for (const [name, entry] of envOf(c)) {
        // A path (a keys file, the event keys' directory) is not a secret; what it names is mounted from one.
        if (/KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL/i.test(name) && !name.endsWith("_FILE") && !name.endsWith("_DIR")) expect(entry.value, `${c.name} env ${name}`).toBeUndefined();
      }
    }
    const driver = containersOf(findOne(pods, (p) => p.component === "llm-driver"))[0]!;
    const secretName = driver.envFrom?.[0]?.secretRef?.name;
    const secret = findOne(byKind(manifests, "Secret"), (s) => s.metadata.name === secretName);
    expect(secret.stringData).toEqual({ OPENAI_API_KEY: modelKey });
    const keysSecret = findOne(byKind(manifests, "Secret"), (s) => s.metadata.name === "rt-agentrt-api-keys");
    expect(JSON.parse((keysSecret.stringData as Record<string, string>)["api-keys.json"]!)).toEqual({ keys: [storedKey] });
  });

  it("hands llm-driver its key-less provider table and context windows through a ConfigMap", () => {
    const driver = containersOf(findOne(podTemplates(manifests), (p) => p.component === "llm-driver"))[0]!;
    const env = envOf(driver);
    const configMap = findOne(byKind(manifests, "ConfigMap"), (c) => c.metadata.name === env.get("LLM_PROVIDERS")?.valueFrom?.configMapKeyRef?.name);
    const data = configMap.data as Record<string, string>;
    expect(JSON.parse(data[env.get("LLM_PROVIDERS")!.valueFrom!.configMapKeyRef!.key]!)).toEqual({ ollama: { baseUrl: "http://ollama.ai.svc:11434/v1" } });
    expect(JSON.parse(data[env.get("LLM_CONTEXT_WINDOWS")!.valueFrom!.configMapKeyRef!.key]!)).toEqual({ "ollama/": 32768 });
  });

  it("gives capability-host a fixed replica count and no HPA when its autoscaling is off", () => {
    const host = findOne(byKind(manifests, "Deployment"), (d) => d.metadata.name === "rt-agentrt-capability-host");
    expect((host.spec as { replicas: number }).replicas).toBe(3);
    const targets = byKind(manifests, "HorizontalPodAutoscaler").map((h) => (h.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name);
    expect(targets.sort()).toEqual(["rt-agentrt-llm-driver", "rt-agentrt-web-gateway"]);
  });

  it("uses existing Secrets instead of making its own", async () => {
    const rendered = await renderChart({
      set: {
        "webGateway.apiKeys.existingSecret": "gw-keys",
        "llmDriver.modelKeys.existingSecret": "model-keys",
        "llmDriver.providersSecret.existingSecret": "llm-providers",
        "nats.embedded.enabled": "false",
        "externalNats.existingSecret": "nats-url",
        "eventSigning.existingSecret": "event-keys",
      },
    });
    expect(byKind(rendered, "Secret")).toEqual([]);
    const pods = podTemplates(rendered);
    const driver = containersOf(findOne(pods, (p) => p.component === "llm-driver"))[0]!;
    expect(driver.envFrom).toEqual([{ secretRef: { name: "model-keys" } }]);
    expect(envOf(driver).get("NATS_URL")?.valueFrom?.secretKeyRef).toEqual({ name: "nats-url", key: "url" });
    // A provider table with keys is a file from the Secret, named by LLM_PROVIDERS.
    const providersFile = envOf(driver).get("LLM_PROVIDERS")?.value ?? "";
    const providersMount = driver.volumeMounts?.find((m) => providersFile.startsWith(`${m.mountPath}/`));
    expect(providersMount?.readOnly).toBe(true);
    expect(findOne(podTemplates(rendered), (p) => p.component === "llm-driver").spec.volumes?.find((v) => v.name === providersMount?.name)?.secret?.secretName).toBe("llm-providers");
    expect(byKind(rendered, "ConfigMap").filter((c) => c.metadata.name.endsWith("llm-driver"))).toEqual([]);
    const gateway = findOne(pods, (p) => p.component === "web-gateway");
    expect(gateway.spec.volumes?.find((v) => v.name === "api-keys")?.secret?.secretName).toBe("gw-keys");
  });
});

describe("bad values fail with a message naming the field", () => {
  it.each([
    // Checked by values.schema.json:
    [{ "llmDriver.autoscalling.enabled": "false" }, /at '\/llmDriver': additional properties 'autoscalling' not allowed/],
    [{ "config.natsStreamReplicas": "0" }, /at '\/config\/natsStreamReplicas': minimum/],
    [{ "nats.embedded.replicas": "2" }, /at '\/nats\/embedded\/replicas': value must be one of 1, 3, 5/],
    [{ "nats.embedded.enabled": "false", "externalNats.url": "nats.example:4222" }, /at '\/externalNats\/url'/],
    [{ "llmDriver.providers.ollama.baseUrl": "http://o:1/v1", "llmDriver.providers.ollama.apiKey": "sk-x" }, /at '\/llmDriver\/providers\/ollama': additional properties 'apiKey' not allowed/],
    // Checked by the templates (rules across keys):
    [{ "config.natsStreamReplicas": "5" }, /config\.natsStreamReplicas \(5\) cannot exceed nats\.embedded\.replicas \(3\)/],
    [{ "nats.embedded.enabled": "false" }, /set externalNats\.url/],
    [{ "agentReducer.replicaCount": "65" }, /agentReducer\.replicaCount \(65\) above config\.partitionCount \(64\)/],
    [{ "llmDriver.autoscaling.minReplicas": "11" }, /llmDriver\.autoscaling\.minReplicas \(11\) must not exceed maxReplicas \(10\)/],
    [{ "image.tag": "latest" }, /at '\/image\/tag'/],
    [{ "image.digest": "sha256:abc" }, /at '\/image\/digest'/],
    [{ "capabilityHost.terminationGracePeriodSeconds": "45" }, /capabilityHost\.terminationGracePeriodSeconds \(45\) is shorter than the service's own drain \(135 s/],
  ])("%o", { concurrent: true }, async (set, message) => {
    const failure = await renderChart({ set }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(HelmError);
    expect((failure as HelmError).message).toMatch(message);
  });
});

describe("generated chart files are current", () => {
  it("values.schema.json matches test/helm/values-schema.ts (pnpm exec tsx test/helm/values-schema.ts --write)", () => {
    expect(readFileSync(join(chartDir, "values.schema.json"), "utf8")).toBe(valuesSchemaJson);
  });

  it("README.md's values table matches values.yaml (pnpm exec tsx test/helm/values-table.ts --write)", () => {
    const readme = readFileSync(join(chartDir, "README.md"), "utf8");
    expect(withValuesTable(readme, renderValuesTable(readFileSync(join(chartDir, "values.yaml"), "utf8")))).toBe(readme);
  });

  it("refuses a values key without a description", () => {
    expect(() => renderValuesTable("# -- documented\na: 1\nb:\n  c: 2\n")).toThrow(UndocumentedValueError);
    expect(() => renderValuesTable("# -- documented\na: 1\nb:\n  c: 2\n")).toThrow(/b\.c/);
  });
});

describe("agentrt-with-nats, its agentrt half (offline)", () => {
  // The official NATS chart cannot be fetched here, so this renders the umbrella with that
  // dependency taken out: it checks the `agentrt:` values the umbrella passes down (built-in
  // NATS off, services on the official chart's Service), not the NATS chart itself.
  let work: string;
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), "agentrt-umbrella-offline-"));
    cpSync(umbrellaDir, join(work, "chart"), { recursive: true, filter: (src) => !src.includes(`${umbrellaDir}/charts`) });
    const chartYaml = YAML.parse(readFileSync(join(work, "chart", "Chart.yaml"), "utf8")) as { dependencies: Array<{ name: string; repository: string }> };
    expect(chartYaml.dependencies.map((d) => [d.name, d.repository])).toEqual([
      ["agentrt", "file://../agentrt"],
      ["nats", "https://nats-io.github.io/k8s/helm/charts/"],
    ]);
    chartYaml.dependencies = chartYaml.dependencies.filter((d) => d.name === "agentrt");
    writeFileSync(join(work, "chart", "Chart.yaml"), YAML.stringify(chartYaml));
    cpSync(chartDir, join(work, "chart", "charts", "agentrt"), { recursive: true });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("points the services at the official chart's Service and installs no NATS of its own", async () => {
    await expect(helm(["lint", "--strict", join(work, "chart"), "--set", "nats.enabled=false"])).resolves.toMatch(/0 chart\(s\) failed/);
    const manifests = await renderChart({ chart: join(work, "chart"), set: { "nats.enabled": "false" } });
    for (const manifest of manifests) validateManifest(manifest);
    expect(byKind(manifests, "StatefulSet")).toEqual([]);
    const pods = podTemplates(manifests);
    expect(pods.map((p) => p.component).sort()).toEqual([...SERVICES].sort());
    for (const pod of pods) {
      const env = envOf(containersOf(pod)[0]!);
      expect(env.get("NATS_URL")?.value).toBe("nats://agentrt-nats:4222");
      expect(env.get("NATS_STREAM_REPLICAS")?.value).toBe("3");
    }
  });
});

// The umbrella chart pulls the official NATS chart, which cannot be fetched offline; it renders
// here only when someone ran `helm dependency build` (charts/nats-*.tgz present).
const natsTgz = existsSync(join(umbrellaDir, "charts")) ? readdirSync(join(umbrellaDir, "charts")).find((f) => /^nats-.*\.tgz$/.test(f)) : undefined;
describe.skipIf(natsTgz === undefined)("agentrt-with-nats (official NATS chart; needs charts/nats-*.tgz)", () => {
  let work: string;
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), "agentrt-umbrella-"));
    cpSync(umbrellaDir, join(work, "chart"), { recursive: true });
    cpSync(chartDir, join(work, "chart", "charts", "agentrt"), { recursive: true });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("renders schema-valid manifests with the services on the official chart's Service", async () => {
    await helm(["lint", join(work, "chart")]);
    const manifests = await renderChart({ chart: join(work, "chart") });
    for (const manifest of manifests) validateManifest(manifest);
    expect(byKind(manifests, "Deployment").map((d) => d.metadata.labels?.["app.kubernetes.io/component"]).sort()).toEqual([...SERVICES].sort());
    const natsService = findOne(byKind(manifests, "Service"), (s) => s.metadata.name === "agentrt-nats");
    expect(natsService).toBeDefined();
    const sts = byKind(manifests, "StatefulSet");
    expect(sts.map((s) => (s.spec as { replicas: number }).replicas)).toEqual([3]);
  });
});

const execFileAsync = promisify(execFile);
/** `nats-server -t` on the rendered config, as pod 0 would see it (SERVER_NAME from the pod name). */
/** What the NATS pod's env gets from the users' Secret (the config references these variables). */
const natsPasswordsEnv = {
  ...Object.fromEntries(NATS_SERVICE_USERS.map((user) => [natsPasswordEnvName(user), `pw-${user}`])),
  // And from the routes' Secret (test/helm/nats-routes.test.ts runs the nodes as a cluster).
  AGENTRT_NATS_ROUTE_PASSWORD: "routePassword",
  ...Object.fromEntries([0, 1, 2].map((i) => [`AGENTRT_NATS_ROUTE_${i}`, `nats://route:routePassword@rt-agentrt-nats-${i}.rt-agentrt-nats-headless:6222`])),
};

async function natsServerAccepts(conf: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "agentrt-natsconf-"));
  try {
    const file = join(dir, "nats.conf");
    writeFileSync(file, conf);
    const binary = process.env.NATS_SERVER_BIN ?? (existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server");
    const { stdout, stderr } = await execFileAsync(binary, ["-t", "-c", file], { env: { ...process.env, SERVER_NAME: "rt-agentrt-nats-0", ...natsPasswordsEnv } });
    return `${stdout}${stderr}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
