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
