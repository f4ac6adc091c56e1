// The services' NetworkPolicies, read as "who may talk to whom": every service pod is selected
// by exactly one policy with both directions; the capability host and the reducer reach only
// NATS and DNS; the driver also the model endpoints; the gateway accepts HTTP/gRPC only from
// the ingress controller's peers and the helm test pod; ops ports only from the scrapers.

import { describe, expect, it } from "vitest";
import type { Manifest } from "./k8s-schema.ts";
import { validateManifest } from "./k8s-schema.ts";
import { byKind, findOne, labelSelectorMatches, peerAdmitsPod, podTemplates, type LabelSelector, type NetworkPolicyPeer, type PodTemplate } from "./manifests.ts";
import { chartDir, renderChart } from "./render.ts";

const SERVICES = ["agent-reducer", "llm-driver", "capability-host", "web-gateway"] as const;
type Port = { port: number | string; protocol?: string };
type Rule = { ports?: Port[]; to?: NetworkPolicyPeer[]; from?: NetworkPolicyPeer[] };
type PolicySpec = { podSelector: LabelSelector; policyTypes: string[]; ingress?: Rule[]; egress?: Rule[] };

const NS = { "kubernetes.io/metadata.name": "agents" };
const policiesOf = (manifests: readonly Manifest[], pod: PodTemplate) =>
  byKind(manifests, "NetworkPolicy").filter((p) => labelSelectorMatches((p.spec as PolicySpec).podSelector, pod.labels));

/** Where a pod's egress may go: a summary of each rule's destinations and ports. */
function egressOf(spec: PolicySpec, pods: readonly PodTemplate[]): string[] {
  return (spec.egress ?? []).map((rule) => {
    const ports = (rule.ports ?? []).map((p) => `${p.port}/${p.protocol ?? "TCP"}`).join(",");
    const to = (rule.to ?? []).map((peer) => {
      if (peer.ipBlock) return `ip:${peer.ipBlock.cidr}${peer.ipBlock.except ? `-${peer.ipBlock.except.length}` : ""}`;
      const selected = pods.filter((p) => peerAdmitsPod(peer, { labels: p.labels, namespaceLabels: NS, sameNamespace: true })).map((p) => p.component);
      return selected.length > 0 ? `pods:${selected.join("+")}` : `ns:${JSON.stringify(peer.namespaceSelector?.matchLabels ?? {})}`;
    });
    return `${to.length === 0 ? "anywhere" : to.join("|")} ${ports}`;
  });
}

describe("service NetworkPolicies (default values)", () => {
  it("select each service pod with exactly one policy, ingress and egress, schema-valid", async () => {
    const manifests = await renderChart();
    for (const m of byKind(manifests, "NetworkPolicy")) validateManifest(m);
    for (const service of SERVICES) {
      const pod = findOne(podTemplates(manifests), (p) => p.component === service);
      const policies = policiesOf(manifests, pod);
      expect(policies.map((p) => p.metadata.name)).toEqual([`rt-agentrt-${service}`]);
      expect((policies[0]!.spec as PolicySpec).policyTypes).toEqual(["Ingress", "Egress"]);
    }
  });

  it("let the host and the reducer reach only DNS and NATS; the driver also the model endpoints on 443; the gateway DNS and NATS", async () => {
    const manifests = await renderChart();
    const pods = podTemplates(manifests);
    const egress = (service: string) => egressOf(policiesOf(manifests, findOne(pods, (p) => p.component === service))[0]!.spec as PolicySpec, pods);
    const dns = 'ns:{"kubernetes.io/metadata.name":"kube-system"} 53/UDP,53/TCP';
    expect(egress("capability-host")).toEqual([dns, "pods:nats 4222/TCP"]);
    expect(egress("agent-reducer")).toEqual([dns, "pods:nats 4222/TCP"]);
    expect(egress("web-gateway")).toEqual([dns, "pods:nats 4222/TCP"]);
    expect(egress("llm-driver")).toEqual([dns, "pods:nats 4222/TCP", "ip:0.0.0.0/0-5 443/TCP"]);
    // The carve-outs: private ranges, the shared range some clusters give pods, and link-local (cloud metadata)
    const driverPolicy = policiesOf(manifests, findOne(pods, (p) => p.component === "llm-driver"))[0]!.spec as PolicySpec;
    const modelRule = (driverPolicy.egress ?? []).find((rule) => rule.to?.some((peer) => peer.ipBlock !== undefined));
    expect(modelRule?.to?.[0]?.ipBlock?.except).toEqual(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16"]);
  });

  it("with llmDriver.placement agent-reducer: the reducer, which runs the driver, also reaches the model endpoints; there is no driver policy", async () => {
    const manifests = await renderChart({ valuesFiles: [`${chartDir}/values-driver-in-reducer.yaml`] });
    const pods = podTemplates(manifests);
    const egress = (service: string) => egressOf(policiesOf(manifests, findOne(pods, (p) => p.component === service))[0]!.spec as PolicySpec, pods);
    const dns = 'ns:{"kubernetes.io/metadata.name":"kube-system"} 53/UDP,53/TCP';
    expect(egress("agent-reducer")).toEqual([dns, "pods:nats 4222/TCP", "ip:0.0.0.0/0-5 443/TCP"]);
    expect(egress("capability-host")).toEqual([dns, "pods:nats 4222/TCP"]);
    expect(byKind(manifests, "NetworkPolicy").map((p) => p.metadata.name)).not.toContain("rt-agentrt-llm-driver");
  });

  it("admit the gateway's HTTP and gRPC only from the ingress controller and the helm test pod; nothing else reaches the workers", async () => {
    const manifests = await renderChart();
    const pods = podTemplates(manifests);
    const gatewayPolicy = policiesOf(manifests, findOne(pods, (p) => p.component === "web-gateway"))[0]!.spec as PolicySpec;
    const rule = findOne(gatewayPolicy.ingress ?? [], (r) => (r.ports ?? []).some((p) => p.port === "http"));
    expect(rule.ports?.map((p) => p.port)).toEqual(["http", "grpc"]);
    const admits = (labels: Record<string, string>, namespace: string) =>
      (rule.from ?? []).some((peer) => peerAdmitsPod(peer, { labels, namespaceLabels: { "kubernetes.io/metadata.name": namespace }, sameNamespace: namespace === "agents" }));
    expect(admits({ "app.kubernetes.io/name": "ingress-nginx" }, "ingress-nginx")).toBe(true);
    expect(admits({ app: "curl" }, "agents"), "an arbitrary pod in the namespace").toBe(false);
    const release = findOne(pods, (p) => p.component === "web-gateway").labels;
    expect(admits({ ...release, "app.kubernetes.io/component": "helm-test" }, "agents")).toBe(true);
    for (const service of ["capability-host", "agent-reducer", "llm-driver"]) {
      const spec = policiesOf(manifests, findOne(pods, (p) => p.component === service))[0]!.spec as PolicySpec;
      expect((spec.ingress ?? []).flatMap((r) => (r.ports ?? []).map((p) => p.port)), `${service} ingress ports`).toEqual(["ops"]);
    }
  });

  it("follow values: ingress peers, model endpoints, an external NATS, and can be turned off", async () => {
    const manifests = await renderChart({
      valuesFiles: [`${chartDir}/values-external-nats.yaml`],
      set: {
        "networkPolicy.externalNats.peers[0].ipBlock.cidr": "10.1.2.0/24",
        "networkPolicy.modelEndpoints.cidrs[0]": "203.0.113.0/24",
        "networkPolicy.modelEndpoints.exceptCidrs": "null",
        "networkPolicy.modelEndpoints.ports[0]": "8443",
        "networkPolicy.metricsPeers": "null",
      },
    });
    const pods = podTemplates(manifests);
    const spec = (service: string) => policiesOf(manifests, findOne(pods, (p) => p.component === service))[0]!.spec as PolicySpec;
    expect(egressOf(spec("llm-driver"), pods).slice(1)).toEqual(["ip:10.1.2.0/24 4222/TCP", "ip:203.0.113.0/24 8443/TCP"]);
    expect(egressOf(spec("capability-host"), pods).slice(1)).toEqual(["ip:10.1.2.0/24 4222/TCP"]);
    expect(spec("capability-host").ingress ?? [], "no scrapers configured: no ingress at all").toEqual([]);
    expect(spec("capability-host").policyTypes, "and still denied, not unrestricted").toContain("Ingress");
    for (const m of manifests) validateManifest(m);
    const off = await renderChart({ set: { "networkPolicy.enabled": "false" } });
    expect(byKind(off, "NetworkPolicy").map((p) => p.metadata.name)).toEqual(["rt-agentrt-nats"]);
  });
});
