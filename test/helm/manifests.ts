// Small typed queries over rendered manifests, so the chart test reads as statements about the
// deployment rather than as object plumbing.

import type { IContainer } from "kubernetes-models/v1/Container";
import type { IEnvVar } from "kubernetes-models/v1/EnvVar";
import type { IPodSpec } from "kubernetes-models/v1/PodSpec";
import type { Manifest } from "./k8s-schema.ts";

export interface PodTemplate {
  /** "<Kind>/<name>" of the workload. */
  owner: string;
  /** The app.kubernetes.io/component label. */
  component: string;
  labels: Record<string, string>;
  spec: IPodSpec;
}

export function byKind(manifests: readonly Manifest[], kind: string): Manifest[] {
  return manifests.filter((m) => m.kind === kind);
}

/** The single item matching `predicate`; throws when there are none or several. */
export function findOne<T>(items: readonly T[], predicate: (item: T) => boolean): T {
  const found = items.filter(predicate);
  if (found.length !== 1) throw new Error(`expected exactly one match, found ${found.length}`);
  return found[0] as T;
}

export function podTemplates(manifests: readonly Manifest[]): PodTemplate[] {
  return manifests
    .filter((m) => m.kind === "Deployment" || m.kind === "StatefulSet")
    .map((m) => {
      const template = (m.spec as { template: { metadata?: { labels?: Record<string, string> }; spec: IPodSpec } }).template;
      const labels = template.metadata?.labels ?? {};
      return { owner: `${m.kind}/${m.metadata.name}`, component: labels["app.kubernetes.io/component"] ?? "", labels, spec: template.spec };
    });
}

export function containersOf(pod: PodTemplate): IContainer[] {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
}

/** A container's env by name; a duplicate name is an error (Kubernetes keeps the last one silently). */
export function envOf(container: IContainer): Map<string, IEnvVar> {
  const env = new Map<string, IEnvVar>();
  for (const entry of container.env ?? []) {
    if (env.has(entry.name)) throw new Error(`container ${container.name} sets env ${entry.name} twice`);
    env.set(entry.name, entry);
  }
  return env;
}

export function selectorMatches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  const entries = Object.entries(selector);
  return entries.length > 0 && entries.every(([key, value]) => labels[key] === value);
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: "In" | "NotIn" | "Exists" | "DoesNotExist"; values?: string[] }>;
}

/** Kubernetes label-selector semantics: every matchLabels pair and every expression must hold; `{}` selects all. */
export function labelSelectorMatches(selector: LabelSelector, labels: Record<string, string>): boolean {
  const pairs = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const expressions = (selector.matchExpressions ?? []).every((e) => {
    const value = labels[e.key];
    if (e.operator === "In") return value !== undefined && (e.values ?? []).includes(value);
    if (e.operator === "NotIn") return value === undefined || !(e.values ?? []).includes(value);
    if (e.operator === "Exists") return value !== undefined;
    return value === undefined;
  });
  return pairs && expressions;
}

export interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}

/**
 * Whether `peer` admits a pod with `labels` in a namespace with `namespaceLabels` (the policy's
 * own namespace when `sameNamespace`). A podSelector alone means the policy's namespace.
 */
export function peerAdmitsPod(peer: NetworkPolicyPeer, pod: { labels: Record<string, string>; namespaceLabels: Record<string, string>; sameNamespace: boolean }): boolean {
  if (peer.ipBlock) return false;
  const namespaceOk = peer.namespaceSelector ? labelSelectorMatches(peer.namespaceSelector, pod.namespaceLabels) : pod.sameNamespace;
  const podOk = peer.podSelector ? labelSelectorMatches(peer.podSelector, pod.labels) : true;
  return namespaceOk && podOk;
}
