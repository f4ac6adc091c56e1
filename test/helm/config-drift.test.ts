// One source for configuration: the env the chart renders for each service is checked against
// that service's own zod config schema (the schema main.ts parses), so a name the chart sets
// that the service does not read (AGENTRT_API_KEYS_FILE vs AGENTRT_KEYS_FILE) or a required key
// left unset fails here, not as a 401 or an unreachable pod after an install. Also: the
// gateway's Service reaches the port the gateway binds, on an address that is not loopback;
// grace periods follow the services' drain limits; values comments name only variables a
// service reads.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_STOP_TIMEOUT_MS } from "@agentrt/service-kit";
// The schemas are the services' own (their main.ts parses the environment with them).
import { reducerConfigSchema } from "../../services/agent-reducer/src/config.ts";
import { hostConfigSchema } from "../../services/capability-host/src/config.ts";
import { DEFAULT_DRAIN_MS, driverConfigSchema } from "../../services/llm-driver/src/config.ts";
import { gatewayConfigSchema } from "../../services/web-gateway/src/config.ts";
import type { Manifest } from "./k8s-schema.ts";
import { byKind, containersOf, envOf, findOne, podTemplates, type PodTemplate } from "./manifests.ts";
import { chartDir, renderChart } from "./render.ts";

/** The part of a zod object schema this test uses (test/ does not depend on zod itself). */
interface ObjectSchema {
  readonly shape: Record<string, { safeParse(value: unknown): { success: boolean } }>;
  partial(): { safeParse(value: unknown): { success: boolean; error?: { message: string } } };
}
const SCHEMAS: Record<string, ObjectSchema> = {
  "agent-reducer": reducerConfigSchema as unknown as ObjectSchema,
  "llm-driver": driverConfigSchema as unknown as ObjectSchema,
  "capability-host": hostConfigSchema as unknown as ObjectSchema,
  "web-gateway": gatewayConfigSchema as unknown as ObjectSchema,
};

/** Keys a schema reads, and those it cannot do without (no default, not optional). */
function keysOf(schema: ObjectSchema): { all: Set<string>; required: string[] } {
  const all = new Set(Object.keys(schema.shape));
  const required = [...all].filter((key) => !schema.shape[key]!.safeParse(undefined).success);
  return { all, required };
}

/** Env names a container gets: env entries and the keys of envFrom Secrets/ConfigMaps rendered by the chart. */
function envNames(manifests: readonly Manifest[], pod: PodTemplate): string[] {
  const container = containersOf(pod)[0]!;
  const names = [...envOf(container).keys()];
  for (const source of container.envFrom ?? []) {
    const ref = source.secretRef?.name ?? source.configMapRef?.name;
    const object = manifests.find((m) => (m.kind === "Secret" || m.kind === "ConfigMap") && m.metadata.name === ref);
    const data = { ...(object?.data as Record<string, string> | undefined), ...(object?.stringData as Record<string, string> | undefined) };
    names.push(...Object.keys(data));
  }
  return names;
}

const CASES: Array<[string, Parameters<typeof renderChart>[0]]> = [
  ["default values", {}],
  ["external NATS", { valuesFiles: [join(chartDir, "values-external-nats.yaml")] }],
  [
    "every optional env on",
    {
      set: {
        "llmDriver.providers.ollama.baseUrl": "http://ollama:11434/v1",
        "llmDriver.contextWindows.gpt": "128000",
        "llmDriver.openaiBaseUrl": "https://models.example/v1",
        "llmDriver.openaiModel": "llama3.1",
        "llmDriver.modelKeys.keys.OPENAI_API_KEY": "sk-test",
      },
    },
  ],
];

describe.each(CASES)("chart env vs each service's config schema (%s)", (_name, options) => {
  let manifests: Manifest[];
  let pods: PodTemplate[];
  beforeAll(async () => {
    manifests = await renderChart(options);
    pods = podTemplates(manifests).filter((p) => p.component in SCHEMAS);
    expect(pods.map((p) => p.component).sort()).toEqual(Object.keys(SCHEMAS).sort());
  });

  it.each(Object.keys(SCHEMAS))("%s: every env name the chart sets is a key its schema reads, and every required key is set", (service) => {
    const pod = findOne(pods, (p) => p.component === service);
    const { all, required } = keysOf(SCHEMAS[service]!);
    const names = envNames(manifests, pod);
    expect(names.filter((name) => !all.has(name)), `${service}: env the service never reads`).toEqual([]);
    expect(required.filter((name) => !names.includes(name)), `${service}: required keys unset`).toEqual([]);
    // Literal values must also parse: a value the schema refuses fails the pod at start.
    const literal = Object.fromEntries([...envOf(containersOf(pod)[0]!).values()].filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
    const parsed = SCHEMAS[service]!.partial().safeParse(literal);
    expect(parsed.success, `${service}: ${parsed.error?.message ?? ""}`).toBe(true);
  });
});

describe("the drift check can fail", () => {
  it("flags the old AGENTRT_API_KEYS_FILE name and an unset required key", () => {
    const { all } = keysOf(SCHEMAS["web-gateway"]!);
    expect(all.has("AGENTRT_API_KEYS_FILE")).toBe(false);
    expect(all.has("AGENTRT_KEYS_FILE")).toBe(true);
    expect(keysOf(gatewayConfigSchema.extend({ MUST: gatewayConfigSchema.shape.HTTP_HOST.unwrap() }) as unknown as ObjectSchema).required).toEqual(["MUST"]);
  });
});

describe("the gateway's Service reaches the gateway", () => {
  it.each([
    ["default ports", {}],
    ["custom ports", { "webGateway.httpPort": "9090", "webGateway.grpcPort": "9091", "webGateway.service.httpPort": "8443" }],
  ])("%s: Service targetPorts resolve to the ports the pod's env binds, on a non-loopback address", async (_name, set) => {
    const manifests = await renderChart({ set });
    const pod = findOne(podTemplates(manifests), (p) => p.component === "web-gateway");
    const container = containersOf(pod)[0]!;
    const env = envOf(container);
    const config = gatewayConfigSchema.parse(Object.fromEntries([...env.values()].filter((e) => e.value !== undefined).map((e) => [e.name, e.value])));
    expect(["127.0.0.1", "localhost", "::1"]).not.toContain(config.HTTP_HOST);
    expect(config.HTTP_HOST).toBe("0.0.0.0");
    const service = findOne(byKind(manifests, "Service"), (s) => s.metadata.name === "rt-agentrt-web-gateway");
    const ports = (service.spec as { ports: Array<{ name: string; targetPort: string | number }> }).ports;
    const containerPort = (target: string | number) => (typeof target === "number" ? target : container.ports?.find((p) => p.name === target)?.containerPort);
    expect(containerPort(findOne(ports, (p) => p.name === "http").targetPort)).toBe(config.HTTP_PORT);
    expect(containerPort(findOne(ports, (p) => p.name === "grpc").targetPort)).toBe(config.GRPC_PORT);
    // The Ingress routes to that Service port by name.
    const ingress = findOne(byKind(await renderChart({ set: { ...set, "webGateway.ingress.enabled": "true" } }), "Ingress"), () => true);
    expect(JSON.stringify(ingress.spec)).toContain('"port":{"name":"http"}');
  });
});

describe("grace periods follow each service's drain limit", () => {
  const grace = (manifests: readonly Manifest[], service: string) => findOne(podTemplates(manifests), (p) => p.component === service).spec.terminationGracePeriodSeconds;

  it("the chart's stop timeout is service-kit's", () => {
    const helpers = readFileSync(join(chartDir, "templates/_helpers.tpl"), "utf8");
    expect(helpers).toContain(`{{- define "agentrt.stopTimeoutMs" -}}${DEFAULT_STOP_TIMEOUT_MS}{{- end }}`);
  });

  it("each grace period covers the drain plus the margin, and moves with the limit", async () => {
    const defaults = await renderChart();
    const margin = 10;
    expect(grace(defaults, "capability-host")).toBe(Math.ceil((120_000 + 5_000) / 1000) + margin);
    expect(grace(defaults, "llm-driver")).toBe(DEFAULT_DRAIN_MS / 1000 + DEFAULT_STOP_TIMEOUT_MS / 1000 + margin);
    expect(grace(defaults, "agent-reducer")).toBe(DEFAULT_STOP_TIMEOUT_MS / 1000 + margin);
    expect(grace(defaults, "web-gateway")).toBe(10 + DEFAULT_STOP_TIMEOUT_MS / 1000 + margin);
    const raised = await renderChart({ set: { "capabilityHost.sandbox.maxRunMs": "600000", "webGateway.shutdownDelaySeconds": "20", "shutdown.marginSeconds": "5" } });
    expect(grace(raised, "capability-host")).toBe(605 + 5);
    expect(grace(raised, "web-gateway")).toBe(20 + 10 + 5);
    const env = envOf(containersOf(findOne(podTemplates(raised), (p) => p.component === "web-gateway"))[0]!);
    expect(env.get("SHUTDOWN_DELAY_MS")?.value).toBe("20000");
  });

  it("the driver's drain is its LLM_DRAIN_MS and lengthens its grace period, or the reducer's when the driver runs there", async () => {
    const driverEnv = (manifests: readonly Manifest[], component: string) => envOf(containersOf(findOne(podTemplates(manifests), (p) => p.component === component))[0]!).get("LLM_DRAIN_MS")?.value;
    const defaults = await renderChart();
    expect(driverEnv(defaults, "llm-driver")).toBe(String(DEFAULT_DRAIN_MS));
    const longer = await renderChart({ set: { "llmDriver.drainSeconds": "120" } });
    expect(driverEnv(longer, "llm-driver")).toBe("120000");
    expect(grace(longer, "llm-driver")).toBe(120 + DEFAULT_STOP_TIMEOUT_MS / 1000 + 10);
    expect(grace(longer, "agent-reducer")).toBe(DEFAULT_STOP_TIMEOUT_MS / 1000 + 10);
    const inReducer = await renderChart({ set: { "llmDriver.placement": "agent-reducer", "llmDriver.drainSeconds": "120" } });
    expect(driverEnv(inReducer, "agent-reducer")).toBe("120000");
    expect(grace(inReducer, "agent-reducer")).toBe(120 + DEFAULT_STOP_TIMEOUT_MS / 1000 + 10);
    await expect(renderChart({ set: { "llmDriver.drainSeconds": "120", "llmDriver.terminationGracePeriodSeconds": "60" } })).rejects.toThrow(/llmDriver.terminationGracePeriodSeconds \(60\) is shorter than the service's own drain/);
  });
});

describe("values.yaml comments name only variables a service reads", () => {
  it("every UPPER_CASE env-like name in values.yaml is a key of some service's schema", () => {
    const known = new Set(Object.values(SCHEMAS).flatMap((s) => [...keysOf(s).all]));
    // Names that are not service env: NATS's own settings, and example model-key names the
    // driver receives through envFrom (it reads <PROVIDER>_API_KEY names from LLM_PROVIDERS).
    // AGENT_WORK_LLM and AGENT_WORK_SCRIPT are the work-queue streams' names, not variables.
    const notServiceEnv = new Set(["GOMEMLIMIT", "OPENROUTER_API_KEY", "JSON", "AGENT_WORK_LLM", "AGENT_WORK_SCRIPT"]);
    const text = readFileSync(join(chartDir, "values.yaml"), "utf8");
    const named = [...new Set([...text.matchAll(/\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\bGOMEMLIMIT\b/g)].map((m) => m[0]))];
    expect(named.length).toBeGreaterThan(10);
    expect(named.filter((name) => !known.has(name) && !notServiceEnv.has(name))).toEqual([]);
  });
});
