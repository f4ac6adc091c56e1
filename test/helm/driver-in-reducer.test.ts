// llmDriver.placement "agent-reducer" (values-driver-in-reducer.yaml): each agent-reducer pod
// runs its llm-driver in-process. No llm-driver workload is rendered; the reducer's pods get the
// driver's configuration, keys and the driver's NATS user, and the env they get is what the
// reducer's own config loaders accept (loadReducerConfig, then inProcessDriverConfig, as its
// main.ts runs them), with every reference resolved against what the chart rendered.

import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { inProcessDriverConfig, loadReducerConfig } from "../../services/agent-reducer/src/config.ts";
import { providersFromConfig } from "../../services/llm-driver/src/config.ts";
import type { Manifest } from "./k8s-schema.ts";
import { byKind, containersOf, envOf, findOne, podTemplates, type PodTemplate } from "./manifests.ts";
import { chartDir, renderChart } from "./render.ts";

const inReducer = join(chartDir, "values-driver-in-reducer.yaml");
const OPTIONAL_ON = {
  "llmDriver.providers.ollama.baseUrl": "http://ollama:11434/v1",
  "llmDriver.contextWindows.gpt": "128000",
  "llmDriver.openaiBaseUrl": "https://models.example/v1",
  "llmDriver.modelKeys.keys.OPENAI_API_KEY": "sk-test",
};

const dataOf = (object: Manifest): Record<string, string> => {
  const data = Object.fromEntries(Object.entries((object.data ?? {}) as Record<string, string>).map(([k, v]) => [k, object.kind === "Secret" ? Buffer.from(v, "base64").toString() : v]));
  return { ...data, ...((object.stringData ?? {}) as Record<string, string>) };
};

/**
 * The environment the pod's container would see: literal values, and references resolved against
 * the rendered ConfigMaps and Secrets (a Secret the chart does not make reads as a placeholder).
 */
function podEnv(manifests: readonly Manifest[], pod: PodTemplate): Record<string, string> {
  const container = containersOf(pod)[0]!;
  const objectNamed = (kind: string, name: string) => manifests.find((m) => m.kind === kind && m.metadata.name === name);
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    const name = source.secretRef?.name ?? source.configMapRef?.name ?? "";
    const object = objectNamed(source.secretRef ? "Secret" : "ConfigMap", name);
    if (object !== undefined) Object.assign(env, dataOf(object));
  }
  for (const entry of envOf(container).values()) {
    const from = entry.valueFrom;
    if (entry.value !== undefined) env[entry.name] = entry.value;
    else if (from?.secretKeyRef) env[entry.name] = dataOf(objectNamed("Secret", from.secretKeyRef.name ?? "") ?? { apiVersion: "v1", kind: "Secret", metadata: { name: "" } })[from.secretKeyRef.key] ?? `secret:${from.secretKeyRef.key}`;
    else if (from?.configMapKeyRef) env[entry.name] = dataOf(findOne(byKind(manifests, "ConfigMap"), (m) => m.metadata.name === from.configMapKeyRef!.name))[from.configMapKeyRef.key]!;
    else if (from?.fieldRef) env[entry.name] = `field:${from.fieldRef.fieldPath}`;
  }
  return env;
}

describe.each([
  ["values-driver-in-reducer.yaml", { valuesFiles: [inReducer] }],
  ["with every optional driver env on", { valuesFiles: [inReducer], set: OPTIONAL_ON }],
  ["with external NATS", { valuesFiles: [join(chartDir, "values-external-nats.yaml"), inReducer], set: { "externalNats.url": "nats://nats.messaging.svc:4222" } }],
])("llmDriver.placement agent-reducer (%s)", (_name, options) => {
  it("renders no llm-driver workload, autoscaler, budget, Service or NetworkPolicy", async () => {
    const manifests = await renderChart(options);
    const driverObjects = manifests.filter((m) => m.metadata.labels?.["app.kubernetes.io/component"] === "llm-driver").map((m) => m.kind);
    // What it still renders is the driver's configuration, which the reducer's pods read.
    expect(driverObjects.filter((kind) => kind !== "ConfigMap" && kind !== "Secret")).toEqual([]);
    expect(podTemplates(manifests).map((p) => p.component).sort()).toEqual(expect.arrayContaining(["agent-reducer", "capability-host", "web-gateway"]));
    expect(podTemplates(manifests).some((p) => p.component === "llm-driver")).toBe(false);
  });

  it("gives each reducer pod an env its own loaders accept: the reducer's, then its driver's, connecting as the llm-driver user", async () => {
    const manifests = await renderChart(options);
    const pod = findOne(podTemplates(manifests), (p) => p.component === "agent-reducer");
    const env = podEnv(manifests, pod);
    const reducer = loadReducerConfig(env);
    expect(reducer.REDUCER_LLM_DRIVER).toBe("in-process");
    const driver = inProcessDriverConfig(reducer, env);
    expect(driver?.LLM_CONCURRENCY).toBe(64);
    if (reducer.NATS_USER !== undefined) {
      // Its own password, from the users Secret the NATS config reads it from.
      expect([reducer.NATS_USER, driver?.NATS_USER]).toEqual(["agent-reducer", "llm-driver"]);
      const password = envOf(containersOf(pod)[0]!).get("LLM_DRIVER_NATS_PASSWORD")?.valueFrom?.secretKeyRef;
      expect(password).toEqual({ name: "rt-agentrt-nats-users", key: "llm-driver" });
      expect(driver?.NATS_PASSWORD).toBe(dataOf(findOne(byKind(manifests, "Secret"), (s) => s.metadata.name === "rt-agentrt-nats-users"))["llm-driver"]);
    } else {
      expect(driver?.NATS_USER).toBeUndefined();
    }
    if ("set" in options && options.set === OPTIONAL_ON) {
      expect(Object.keys(providersFromConfig(driver!)).sort()).toEqual(["ollama", "openai"]);
      expect(providersFromConfig(driver!).openai?.baseUrl).toBe("https://models.example/v1");
      expect(env.OPENAI_API_KEY).toBe("sk-test");
    }
  });
});

describe("llmDriver.placement agent-reducer, the pods' configuration", () => {
  it("rolls the reducer's pods when the driver's keys change, and mounts a providers Secret there", async () => {
    const reducerPod = async (set: Record<string, string>) => {
      const manifests = await renderChart({ valuesFiles: [inReducer], set });
      const deployment = findOne(byKind(manifests, "Deployment"), (d) => d.metadata.name === "rt-agentrt-agent-reducer");
      const checksum = (deployment.spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations["checksum/config"];
      return { checksum, pod: findOne(podTemplates(manifests), (p) => p.component === "agent-reducer") };
    };
    const a = await reducerPod({ "llmDriver.modelKeys.keys.OPENAI_API_KEY": "sk-a" });
    const b = await reducerPod({ "llmDriver.modelKeys.keys.OPENAI_API_KEY": "sk-b" });
    expect(a.checksum).not.toBe(b.checksum);
    const { pod } = await reducerPod({ "llmDriver.providersSecret.existingSecret": "my-providers" });
    expect(pod.spec.volumes?.find((v) => v.name === "llm-providers")?.secret?.secretName).toBe("my-providers");
    expect(containersOf(pod)[0]!.volumeMounts?.find((m) => m.name === "llm-providers")).toEqual({ name: "llm-providers", mountPath: "/etc/agentrt/llm-providers", readOnly: true });
    expect(envOf(containersOf(pod)[0]!).get("LLM_PROVIDERS")?.value).toBe("/etc/agentrt/llm-providers/providers.json");
  });

  it("keeps the queue shape by default: the reducer pods run no driver", async () => {
    const pod = findOne(podTemplates(await renderChart()), (p) => p.component === "agent-reducer");
    const env = envOf(containersOf(pod)[0]!);
    expect(env.has("REDUCER_LLM_DRIVER")).toBe(false);
    expect([...env.keys()].filter((name) => name.startsWith("LLM_"))).toEqual([]);
  });
});
