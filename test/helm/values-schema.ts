// The JSON Schema of the agentrt chart's values (deploy/helm/agentrt/values.schema.json), which
// helm checks on every lint, template, install and upgrade: a misspelt key or a wrong type
// fails with the key's path instead of being ignored. Objects the chart owns are closed
// (additionalProperties: false); Kubernetes objects passed through (resources, affinity, ...)
// are left to the Kubernetes schemas. The chart test fails when the committed file is stale;
// regenerate it with:
//   pnpm exec tsx test/helm/values-schema.ts --write

import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
// A relative import: `--write` runs from the root, which has no workspace links.
import { PROVIDER_NAME_PATTERN, PROVIDER_NAMESPACE_PATTERN } from "../../packages/service-kit/src/nats-permissions.ts";

type Schema = Record<string, unknown>;

const str = (description: string, extra: Schema = {}): Schema => ({ type: "string", description, ...extra });
const int = (description: string, extra: Schema = {}): Schema => ({ type: "integer", description, ...extra });
const bool = (description: string): Schema => ({ type: "boolean", description });
const list = (description: string, items: Schema = {}): Schema => ({ type: "array", description, items });
const freeObject = (description: string): Schema => ({ type: "object", description });
const stringMap = (description: string): Schema => ({ type: "object", description, additionalProperties: { type: "string" } });
const closed = (properties: Record<string, Schema>, description?: string): Schema => ({
  type: "object",
  ...(description ? { description } : {}),
  additionalProperties: false,
  properties,
});
/** A Kubernetes quantity such as 256Mi or 500m (strings) or a plain number. */
const quantity = (description: string): Schema => ({ type: ["string", "integer"], description, pattern: "^[0-9.]+([eE][0-9]+|[mkMGTPE]|[KMGTPE]i)?$" });
const intOrPercent = (description: string): Schema => ({ type: ["integer", "string"], description, pattern: "^([0-9]+%?)?$" });
const percentTarget = (description: string): Schema => ({ type: ["integer", "null"], description, minimum: 1 });

const pdb = closed(
  {
    enabled: bool("Create a PodDisruptionBudget."),
    minAvailable: intOrPercent("Pods that must stay up; takes precedence when set."),
    maxUnavailable: intOrPercent("Pods that may be down at once when minAvailable is empty."),
  },
  "PodDisruptionBudget of the service.",
);

const autoscaling = closed(
  {
    enabled: bool("Create a HorizontalPodAutoscaler."),
    minReplicas: int("Fewest replicas.", { minimum: 1 }),
    maxReplicas: int("Most replicas.", { minimum: 1 }),
    targetCPUUtilizationPercentage: percentTarget("Target average CPU utilisation (% of requests)."),
    targetMemoryUtilizationPercentage: percentTarget("Target average memory utilisation (% of requests)."),
    behavior: freeObject("autoscaling/v2 HorizontalPodAutoscalerBehavior."),
  },
  "HorizontalPodAutoscaler of the service.",
);

const keda = closed(
  {
    enabled: bool("Create a KEDA ScaledObject on the service's work-queue consumer (AGENT_WORK_LLM or AGENT_WORK_SCRIPT)."),
    minReplicas: int("Fewest replicas.", { minimum: 0 }),
    maxReplicas: int("Most replicas.", { minimum: 1 }),
    lagThreshold: int("Pending work items per replica before scaling out.", { minimum: 1 }),
    natsMonitoringEndpoint: str("host:port of the NATS monitoring endpoint (\"\" = the built-in NATS).", { pattern: "^$|^[A-Za-z0-9.-]+:[0-9]+$" }),
  },
  "KEDA ScaledObject of the service.",
);
const peers = (description: string) => list(description, { type: "object" });
const ports = (description: string) => ({ ...list(description, { type: "integer", minimum: 1, maximum: 65535 }), minItems: 1 });

/** Keys every service section has; `extra` adds the service's own. */
function serviceSection(name: string, extra: Record<string, Schema>, options: { autoscaled: boolean; workQueue?: boolean }): Schema {
  return closed(
    {
      replicaCount: int(options.autoscaled ? "Replicas when autoscaling is off." : "Replicas.", { minimum: options.autoscaled ? 0 : 1 }),
      command: list(`Full command override ([] = image.commandPrefix + services/${name}/dist/main.mjs).`, { type: "string" }),
      terminationGracePeriodSeconds: { type: ["integer", "null"], description: "Seconds between SIGTERM and SIGKILL (null = derived from the drain limit).", minimum: 0 },
      resources: freeObject("Container resources (requests/limits)."),
      pdb,
      ...(options.autoscaled ? { autoscaling } : {}),
      ...(options.workQueue ? { keda } : {}),
      extraEnv: list("Extra Kubernetes EnvVar entries.", { type: "object" }),
      extraVolumes: list("Extra Kubernetes Volume entries of the pod.", { type: "object" }),
      extraVolumeMounts: list("Extra Kubernetes VolumeMount entries of the container.", { type: "object" }),
      podAnnotations: stringMap("Extra pod annotations."),
      podLabels: stringMap("Extra pod labels."),
      nodeSelector: stringMap("Node selector."),
      tolerations: list("Tolerations.", { type: "object" }),
      affinity: freeObject("Affinity."),
      topologySpreadConstraints: list("Topology spread constraints.", { type: "object" }),
      ...extra,
    },
    `Settings of ${name}.`,
  );
}

export const valuesSchema: Schema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  title: "agentrt chart values",
  ...closed({
    nameOverride: str("Overrides the chart name used in object names."),
    fullnameOverride: str("Overrides the full base name of every object."),
    clusterDomain: str("DNS suffix of the cluster.", { minLength: 1 }),
    image: closed({
      repository: str("Runtime image repository.", { minLength: 1 }),
      tag: { type: ["string", "number"], description: "Image tag; empty means the chart's appVersion; `latest` is refused.", not: { const: "latest" } },
      digest: str("Image digest; when set the image is pulled by digest.", { pattern: "^$|^sha256:[0-9a-f]{64}$" }),
      pullPolicy: str("Image pull policy.", { enum: ["Always", "IfNotPresent", "Never"] }),
      workingDir: str("Directory of the monorepo inside the image.", { minLength: 1 }),
      commandPrefix: list("Command before services/<service>/dist/main.mjs.", { type: "string" }),
    }),
    imagePullSecrets: list("Image pull secrets.", closed({ name: str("Secret name.") })),
    priorityClassName: str("PriorityClass of the service pods."),
    revisionHistoryLimit: int("Old ReplicaSets kept per Deployment.", { minimum: 0 }),
    tmpVolumeSizeLimit: quantity("Size cap of each pod's /tmp."),
    spreadAcrossNodes: bool("Spread replicas across nodes (soft)."),
    serviceAccount: closed({
      create: bool("Create a ServiceAccount."),
      name: str("ServiceAccount name."),
      annotations: stringMap("ServiceAccount annotations."),
      automountToken: bool("Mount an API token into the pods."),
    }),
    podSecurityContext: freeObject("Pod security context of every pod."),
    containerSecurityContext: freeObject("Security context of every container."),
    config: closed({
      logLevel: str("LOG_LEVEL.", { enum: ["trace", "debug", "info", "warn", "error", "fatal"] }),
      partitionCount: int("PARTITION_COUNT.", { minimum: 1, maximum: 1024 }),
      natsStreamReplicas: int("NATS_STREAM_REPLICAS.", { minimum: 1, maximum: 5 }),
      opsPort: int("OPS_PORT.", { minimum: 1, maximum: 65535 }),
      quotas: closed({
        streamBytes: int("AGENT_STREAM_QUOTA_BYTES.", { minimum: 1 }),
        streamEvents: int("AGENT_STREAM_QUOTA_EVENTS.", { minimum: 1 }),
        tenantDepth: int("AGENT_TENANT_DEPTH (0: no tenant quotas).", { minimum: 0, maximum: 64 }),
        tenantBytes: int("AGENT_TENANT_QUOTA_BYTES.", { minimum: 1 }),
        tenantStreams: int("AGENT_TENANT_QUOTA_STREAMS.", { minimum: 1 }),
      }),
    }),
    shutdown: closed({
      marginSeconds: int("Seconds added to each service's drain limit.", { minimum: 0 }),
    }),
    probes: closed({
      startup: freeObject("Startup probe timings."),
      liveness: freeObject("Liveness probe timings."),
      readiness: freeObject("Readiness probe timings."),
    }),
    eventSigning: closed({
      enabled: bool("Each service signs its records and reads only records signed by their types' service."),
      existingSecret: str("Secret with <service>.key and <service>.pub for the four services (\"\" = generated once)."),
      unsignedBefore: str("Unsigned records stored before this time stay readable (\"\" = when the keys are generated).", {
        pattern: "^$|^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?Z$",
      }),
      otherPublicKeysConfigMap: str("ConfigMap of other public keys, each named <service>.<name>.pub, trusted too (rotation), and of their retirement instants (<service>.<name>.retired, an ISO time); \"\" = none."),
    }),
    externalNats: closed({
      url: str("NATS_URL of an existing NATS.", { pattern: "^$|^(nats|tls|ws|wss)://" }),
      existingSecret: str("Secret holding the URL."),
      existingSecretKey: str("Key of the URL in existingSecret.", { minLength: 1 }),
    }),
    nats: closed({
      auth: closed({
        enabled: bool("One NATS user per service with least-privilege permissions."),
        existingSecret: str("Secret with each NATS user's password (\"\" = generated once)."),
        sharedProviderUser: bool("The shared capability-provider NATS user, which may serve any namespace."),
        providers: list(
          "Capability providers with their own NATS user (provider-<name>), bound to their namespaces.",
          {
            ...closed({
              name: str("The user is provider-<name>: a lower-case letter or digit, then up to 40 of them or '-'.", { pattern: PROVIDER_NAME_PATTERN.source }),
              namespaces: { ...list("The namespaces it serves (itx.<namespace>).", { type: "string", pattern: PROVIDER_NAMESPACE_PATTERN.source }), minItems: 1 },
            }),
            required: ["name", "namespaces"],
          },
        ),
      }),
      embedded: closed({
        enabled: bool("Install the built-in NATS cluster."),
        replicas: int("Number of NATS nodes (odd).", { enum: [1, 3, 5] }),
        image: closed({
          repository: str("NATS image.", { minLength: 1 }),
          tag: str("NATS image tag.", { minLength: 1 }),
          pullPolicy: str("Pull policy.", { enum: ["Always", "IfNotPresent", "Never"] }),
        }),
        clusterName: str("Cluster name announced on routes."),
        routes: closed({ existingSecret: str("Secret with the nodes' route password under the key password (\"\" = generated once).") }, "How the nodes' routes authenticate."),
        maxPayload: int("Largest message in bytes.", { minimum: 1024, maximum: 67108864 }),
        lameDuckDuration: str("Lame-duck duration (Go duration).", { pattern: "^[0-9]+(ms|s|m|h)$" }),
        terminationGracePeriodSeconds: int("Grace period of a NATS pod.", { minimum: 0 }),
        jetstream: closed({
          storageSize: quantity("PVC size per node."),
          storageClassName: str("StorageClass of the claims."),
          maxFileStore: str("JetStream file store limit (NATS units).", { pattern: "^[0-9]+[KMGT]B?$" }),
          maxMemoryStore: str("JetStream memory store limit (NATS units).", { pattern: "^[0-9]+[KMGT]B?$" }),
        }),
        resources: freeObject("Resources of each NATS container."),
        goMemLimit: str("GOMEMLIMIT of nats-server.", { pattern: "^$|^[0-9]+(B|KiB|MiB|GiB|TiB)?$" }),
        podAnnotations: stringMap("Extra annotations on NATS pods."),
        nodeSelector: stringMap("Node selector of NATS pods."),
        tolerations: list("Tolerations of NATS pods.", { type: "object" }),
        affinity: freeObject("Affinity of NATS pods."),
        networkPolicy: closed({
          enabled: bool("Restrict who may connect to the built-in NATS."),
          extraClientPeers: list("Extra NetworkPolicyPeer entries for port 4222.", { type: "object" }),
          extraMonitorPeers: peers("Extra NetworkPolicyPeer entries for the monitoring port 8222."),
        }),
      }),
    }),
    networkPolicy: closed({
      enabled: bool("Create one NetworkPolicy per service."),
      dnsPeers: peers("Peers serving DNS."),
      gatewayIngressPeers: peers("Peers allowed to reach the gateway's HTTP and gRPC ports."),
      metricsPeers: peers("Peers allowed to scrape the ops ports and the NATS monitoring port."),
      externalNats: closed({
        peers: peers("Peers of an external NATS ([] = any address)."),
        ports: ports("Client ports of an external NATS."),
      }),
      modelEndpoints: closed({
        cidrs: list("CIDRs llm-driver may reach.", { type: "string", pattern: "^[0-9a-fA-F.:]+/[0-9]+$" }),
        exceptCidrs: list("CIDRs carved out of cidrs.", { type: "string", pattern: "^[0-9a-fA-F.:]+/[0-9]+$" }),
        peers: peers("In-cluster model servers."),
        ports: ports("Ports of the model endpoints."),
      }),
    }),
    helmTest: closed({
      enabled: bool("Render the helm test hook."),
      apiKeySecret: closed({
        name: str("Secret holding a presented API key."),
        key: str("Key of the API key in that Secret.", { minLength: 1 }),
      }),
      pathPrefix: str("Stream-path prefix of the test's agents.", { pattern: "^/" }),
      timeoutSeconds: int("Seconds the turn may take.", { minimum: 1 }),
    }),
    agentReducer: serviceSection(
      "agent-reducer",
      {
        leaseTtlMs: int("REDUCER_LEASE_TTL_MS.", { minimum: 500 }),
        snapshotEveryEvents: int("REDUCER_SNAPSHOT_EVERY_EVENTS.", { minimum: 1 }),
        projectWorker: bool("PROJECT_WORKER on/off."),
      },
      { autoscaled: false },
    ),
    llmDriver: serviceSection(
      "llm-driver",
      {
        placement: str("Where drivers run: their own Deployment, or inside each agent-reducer pod.", { enum: ["deployment", "agent-reducer"] }),
        providers: {
          type: "object",
          description: "LLM_PROVIDERS without keys (llm-driver's providers.ts schema minus apiKey).",
          propertyNames: { pattern: "^[A-Za-z0-9._-]+$" },
          additionalProperties: {
            ...closed({
              baseUrl: str("Provider base URL.", { pattern: "^https?://" }),
              models: stringMap("Model names after the provider prefix -> the provider's names."),
              api: str("API dialect.", { enum: ["chat", "responses"] }),
              promptCacheKey: bool("Send prompt_cache_key."),
            }),
            required: ["baseUrl"],
          },
        },
        providersSecret: closed({
          existingSecret: str("Existing Secret with a providers JSON file (keys included)."),
          key: str("File name of the JSON in that Secret.", { pattern: "^[-._a-zA-Z0-9]+$" }),
        }),
        contextWindows: { type: "object", description: "LLM_CONTEXT_WINDOWS.", additionalProperties: { type: "integer", minimum: 1 } },
        openaiBaseUrl: str("OPENAI_BASE_URL.", { pattern: "^$|^https?://" }),
        openaiModel: str("OPENAI_MODEL."),
        concurrency: int("LLM_CONCURRENCY.", { minimum: 1, maximum: 1024 }),
        drainSeconds: int("LLM_DRAIN_MS in seconds: how long a stopping driver lets its model calls finish.", { minimum: 0, maximum: 3600 }),
        modelKeys: closed({
          existingSecret: str("Existing Secret of model keys."),
          keys: { type: "object", description: "Env var name -> key.", propertyNames: { pattern: "^[A-Za-z_][A-Za-z0-9_]*$" }, additionalProperties: { type: "string" } },
        }),
      },
      { autoscaled: true, workQueue: true },
    ),
    capabilityHost: serviceSection(
      "capability-host",
      {
        sandbox: closed({
          concurrency: int("SCRIPT_CONCURRENCY.", { minimum: 1 }),
          memoryLimitMb: int("SCRIPT_MEMORY_LIMIT_MB.", { minimum: 8 }),
          maxRunMs: int("SCRIPT_MAX_RUN_MS.", { minimum: 100 }),
          typecheckBudgetMs: int("SCRIPT_TYPECHECK_BUDGET_MS.", { minimum: 10 }),
        }),
      },
      { autoscaled: true, workQueue: true },
    ),
    webGateway: serviceSection(
      "web-gateway",
      {
        shutdownDelaySeconds: int("SHUTDOWN_DELAY_MS in seconds (the gateway takes at most 300).", { minimum: 0, maximum: 300 }),
        httpPort: int("HTTP_PORT.", { minimum: 1, maximum: 65535 }),
        grpcPort: int("GRPC_PORT.", { minimum: 1, maximum: 65535 }),
        apiKeys: closed({
          existingSecret: str("Existing Secret with the API keys file."),
          existingSecretKey: str("File name of the keys file in the Secret.", { pattern: "^[-._a-zA-Z0-9]+$" }),
          keys: list(
            "Stored keys of a chart-made keys file (web-gateway's keys.ts schema).",
            {
              ...closed({
                id: str("Key id.", { pattern: "^[A-Za-z0-9]+$" }),
                name: str("Label."),
                salt: str("Per-key salt.", { pattern: "^[0-9a-f]{32}$" }),
                hash: str("sha256(salt + secret).", { pattern: "^[0-9a-f]{64}$" }),
                scopes: {
                  ...list("Scopes.", {
                    ...closed({
                      prefix: str("Stream-path prefix.", { pattern: "^/" }),
                      verbs: { ...list("Verbs.", { enum: ["read", "append", "operate", "admin"] }), minItems: 1 },
                    }),
                    required: ["prefix", "verbs"],
                  }),
                  minItems: 1,
                },
                rateLimit: { ...closed({ perSecond: { type: "number", exclusiveMinimum: 0 }, burst: int("Burst.", { minimum: 1 }) }), required: ["perSecond", "burst"] },
              }),
              required: ["id", "salt", "hash", "scopes"],
            },
          ),
        }),
        service: closed({
          type: str("Service type.", { enum: ["ClusterIP", "NodePort", "LoadBalancer"] }),
          httpPort: int("Service port for HTTP.", { minimum: 1, maximum: 65535 }),
          grpcPort: int("Service port for gRPC.", { minimum: 1, maximum: 65535 }),
          annotations: stringMap("Service annotations."),
        }),
        ingress: closed({
          enabled: bool("Create an Ingress."),
          className: str("IngressClass name."),
          annotations: stringMap("Ingress annotations."),
          hosts: list(
            "Hosts and paths.",
            closed({
              host: str("Host name."),
              paths: list("Paths.", closed({ path: str("Path.", { pattern: "^/" }), pathType: str("Path type.", { enum: ["Prefix", "Exact", "ImplementationSpecific"] }) })),
            }),
          ),
          tls: list("networking.k8s.io/v1 IngressTLS entries.", { type: "object" }),
        }),
      },
      { autoscaled: true },
    ),
    metrics: closed({
      serviceMonitor: closed({
        enabled: bool("Create a ServiceMonitor."),
        labels: stringMap("Extra labels."),
        interval: str("Scrape interval.", { pattern: "^[0-9]+(ms|s|m|h)$" }),
        scrapeTimeout: str("Scrape timeout.", { pattern: "^[0-9]+(ms|s|m|h)$" }),
      }),
    }),
    // Helm passes `global` to every chart; an umbrella chart may set it.
    global: freeObject("Helm global values (unused by this chart)."),
  }),
};

export const valuesSchemaJson = `${JSON.stringify(valuesSchema, null, 2)}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const target = fileURLToPath(new URL("../../deploy/helm/agentrt/values.schema.json", import.meta.url));
  if (process.argv.includes("--write")) writeFileSync(target, valuesSchemaJson);
  else process.stdout.write(valuesSchemaJson);
}
