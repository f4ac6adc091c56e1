// Validates rendered manifests against the Kubernetes OpenAPI schemas shipped in
// kubernetes-models. Two checks per object: the model's own `.validate()` (types, required
// fields, formats) and a strict pass for unknown fields, which the generated validators let
// through (additionalProperties is not enforced), so a misspelt key like `readinesProbe` would
// otherwise pass and be silently dropped by the API server.

import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Pod } from "kubernetes-models/v1/Pod";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { Ingress } from "kubernetes-models/networking.k8s.io/v1/Ingress";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";

interface ValidatableModel {
  validate(): void;
}
type ModelClass = new (data: Record<string, unknown>) => ValidatableModel;

/**
 * Every kind the chart (and the official NATS chart through the umbrella) may render. A kind
 * missing here fails validation: add its kubernetes-models class rather than skipping it.
 */
const MODELS: ReadonlyMap<string, ModelClass> = new Map<string, ModelClass>([
  ["v1/ConfigMap", ConfigMap as unknown as ModelClass],
  ["v1/Pod", Pod as unknown as ModelClass],
  ["v1/Secret", Secret as unknown as ModelClass],
  ["v1/Service", Service as unknown as ModelClass],
  ["v1/ServiceAccount", ServiceAccount as unknown as ModelClass],
  ["apps/v1/Deployment", Deployment as unknown as ModelClass],
  ["apps/v1/StatefulSet", StatefulSet as unknown as ModelClass],
  ["policy/v1/PodDisruptionBudget", PodDisruptionBudget as unknown as ModelClass],
  ["autoscaling/v2/HorizontalPodAutoscaler", HorizontalPodAutoscaler as unknown as ModelClass],
  ["networking.k8s.io/v1/Ingress", Ingress as unknown as ModelClass],
  ["networking.k8s.io/v1/NetworkPolicy", NetworkPolicy as unknown as ModelClass],
]);

/**
 * Custom resources whose CRDs are not part of Kubernetes, so kubernetes-models has no schema
 * for them. Each is checked by the structural check given here instead, explicitly.
 */
const CUSTOM_RESOURCES: ReadonlyMap<string, (obj: Manifest) => string[]> = new Map([
  ["monitoring.coreos.com/v1/ServiceMonitor", checkServiceMonitor],
  ["keda.sh/v1alpha1/ScaledObject", checkScaledObject],
]);

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export class ManifestSchemaError extends Error {
  readonly code = "manifest_schema_violation";
  constructor(manifest: { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } }, problems: string[]) {
    super(`${String(manifest.apiVersion)} ${String(manifest.kind)} "${String(manifest.metadata?.name)}": ${problems.join("; ")}`);
    this.name = "ManifestSchemaError";
  }
}

/** Throws ManifestSchemaError unless `obj` is a valid object of a known kind. */
export function validateManifest(obj: Manifest): void {
  const key = `${obj.apiVersion}/${obj.kind}`;
  const custom = CUSTOM_RESOURCES.get(key);
  if (custom) {
    const problems = custom(obj);
    if (problems.length > 0) throw new ManifestSchemaError(obj, problems);
    return;
  }
  const Model = MODELS.get(key);
  if (!Model) throw new ManifestSchemaError(obj, [`no schema registered for ${key}: add its kubernetes-models class to MODELS`]);
  const model = new Model(obj);
  try {
    model.validate();
  } catch (error) {
    throw new ManifestSchemaError(obj, [(error as Error).message]);
  }
  const unknown = unknownFields(model);
  if (unknown.length > 0) throw new ManifestSchemaError(obj, unknown.map((path) => `unknown field ${path}`));
}

/**
 * Fields of `model` its schema validator never looked at. The generated validators read every
 * property their schema declares (and iterate every key of free-form maps such as labels), so
 * running one over a proxy that records reads leaves exactly the undeclared fields unread.
 */
export function unknownFields(model: ValidatableModel): string[] {
  const reads = new WeakMap<object, Set<string>>();
  const track = (value: unknown): unknown => {
    if (value === null || typeof value !== "object") return value;
    return new Proxy(value, {
      get(target, property, receiver) {
        if (typeof property === "string") {
          let seen = reads.get(target);
          if (!seen) reads.set(target, (seen = new Set()));
          seen.add(property);
        }
        return track(Reflect.get(target, property, receiver));
      },
    });
  };
  model.validate.call(track(model));
  const unread: string[] = [];
  const walk = (value: unknown, path: string): void => {
    if (value === null || typeof value !== "object") return;
    if (Array.isArray(value)) {
      value.forEach((item, index) => walk(item, `${path}/${index}`));
      return;
    }
    const seen = reads.get(value) ?? new Set<string>();
    for (const [key, child] of Object.entries(value)) {
      if (seen.has(key)) walk(child, `${path}/${key}`);
      else unread.push(`${path}/${key}`);
    }
  };
  walk(model, "");
  return unread;
}

function checkServiceMonitor(obj: Manifest): string[] {
  const problems: string[] = [];
  const spec = obj.spec as { selector?: { matchLabels?: unknown }; endpoints?: Array<{ port?: unknown; path?: unknown }> } | undefined;
  if (!obj.metadata?.name) problems.push("metadata.name is required");
  if (!spec?.selector?.matchLabels || typeof spec.selector.matchLabels !== "object") problems.push("spec.selector.matchLabels must be an object");
  if (!Array.isArray(spec?.endpoints) || spec.endpoints.length === 0) problems.push("spec.endpoints must list at least one endpoint");
  for (const [i, endpoint] of (spec?.endpoints ?? []).entries()) {
    if (typeof endpoint.port !== "string") problems.push(`spec.endpoints[${i}].port must be a port name`);
    if (typeof endpoint.path !== "string" || !endpoint.path.startsWith("/")) problems.push(`spec.endpoints[${i}].path must be an absolute path`);
  }
  return problems;
}

/** The fields of KEDA's ScaledObject (keda.sh/v1alpha1) the chart sets, with their types. */
function checkScaledObject(obj: Manifest): string[] {
  const problems: string[] = [];
  const known = new Set(["scaleTargetRef", "minReplicaCount", "maxReplicaCount", "pollingInterval", "cooldownPeriod", "triggers", "advanced", "fallback", "idleReplicaCount"]);
  const spec = (obj.spec ?? {}) as Record<string, unknown> & { scaleTargetRef?: { name?: unknown }; triggers?: Array<{ type?: unknown; metadata?: Record<string, unknown> }> };
  for (const key of Object.keys(spec)) if (!known.has(key)) problems.push(`unknown field /spec/${key}`);
  if (typeof spec.scaleTargetRef?.name !== "string") problems.push("spec.scaleTargetRef.name must be a string");
  for (const key of ["minReplicaCount", "maxReplicaCount"]) if (spec[key] !== undefined && !Number.isInteger(spec[key])) problems.push(`spec.${key} must be integer`);
  if (!Array.isArray(spec.triggers) || spec.triggers.length === 0) problems.push("spec.triggers must list at least one trigger");
  for (const [i, trigger] of (spec.triggers ?? []).entries()) {
    if (typeof trigger.type !== "string") problems.push(`spec.triggers[${i}].type must be a string`);
    for (const [k, v] of Object.entries(trigger.metadata ?? {})) if (typeof v !== "string") problems.push(`spec.triggers[${i}].metadata.${k} must be a string (KEDA reads strings)`);
  }
  return problems;
}
