// The chart's event keys (eventSigning): generated once per release, each service pod mounting
// only its own private key (the reducer also the driver's when it runs the driver) beside every
// public key, and the files as mounted are what the services' loader accepts: Helm's keys and
// certificates, read by the same code the services run.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SIGNING_SERVICES, loadEventSigning } from "@agentrt/service-kit";
import { type RecordTrust, SIGNATURE_HEADER, SIGNER_HEADER } from "@agentrt/streams/jetstream";
import { afterAll, describe, expect, it } from "vitest";
import type { Manifest } from "./k8s-schema.ts";
import { byKind, containersOf, envOf, findOne, podTemplates } from "./manifests.ts";
import { chartDir, renderChart } from "./render.ts";

const SECRET = "rt-agentrt-event-keys";
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Projection {
  readonly sources: ({ secret: { name: string; optional?: boolean; items: { key: string; path: string }[] } } | { configMap: { name: string }; secret?: undefined })[];
}

type SecretSource = { secret: { name: string; optional?: boolean; items: { key: string; path: string }[] } };
const secretSources = (projection: Projection) => projection.sources.filter((s): s is SecretSource => s.secret !== undefined);

function secretData(manifests: readonly Manifest[], name = SECRET): Record<string, string> {
  return (findOne(byKind(manifests, "Secret"), (s) => s.metadata.name === name) as Manifest & { data: Record<string, string> }).data;
}

function servicePod(manifests: readonly Manifest[], component: string) {
  return findOne(podTemplates(manifests), (p) => p.component === component && p.owner.startsWith("Deployment/"));
}

function projection(manifests: readonly Manifest[], component: string): Projection {
  const volume = (servicePod(manifests, component).spec.volumes ?? []).find((v) => v.name === "event-keys");
  return volume?.projected as unknown as Projection;
}

/** The files a pod of `component` sees at EVENT_KEYS_DIR, written where the loader can read them. */
function mountedDir(manifests: readonly Manifest[], component: string): string {
  const data = secretData(manifests);
  const dir = mkdtempSync(join(tmpdir(), "agentrt-chart-keys-"));
  dirs.push(dir);
  for (const source of secretSources(projection(manifests, component))) {
    for (const item of source.secret.items) if (data[item.key] !== undefined) writeFileSync(join(dir, item.path), Buffer.from(data[item.key]!, "base64"));
  }
  return dir;
}

const mountedKeys = (manifests: readonly Manifest[], component: string) =>
  secretSources(projection(manifests, component))
    .flatMap((s) => s.secret.items.map((i) => i.key))
    .filter((key) => key.endsWith(".key"))
    .sort();

describe("the chart's event keys", () => {
  it("by default: one Secret with a key pair per service and the cut-off; each pod mounts its own private key, every public key, and says where", async () => {
    const renderedAt = Date.now();
    const manifests = await renderChart();
    const data = secretData(manifests);
    expect(Object.keys(data).sort()).toEqual([...SIGNING_SERVICES.flatMap((s) => [`${s}.key`, `${s}.pub`]), "unsigned-before"].sort());
    const cutOff = Date.parse(Buffer.from(data["unsigned-before"]!, "base64").toString());
    expect(Math.abs(cutOff - renderedAt)).toBeLessThan(120_000);
    for (const service of SIGNING_SERVICES) {
      expect(mountedKeys(manifests, service), service).toEqual([`${service}.key`]);
      const container = findOne(containersOf(servicePod(manifests, service)), (c) => c.name === service);
      expect(envOf(container).get("EVENT_KEYS_DIR")?.value).toBe("/etc/agentrt/event-keys");
      expect(container.volumeMounts?.find((m) => m.name === "event-keys")).toEqual({ name: "event-keys", mountPath: "/etc/agentrt/event-keys", readOnly: true });
    }
  });

  it("the mounted files are what each service loads: Helm's Ed25519 keys and certificates, a signature of one read by another", async () => {
    const manifests = await renderChart();
    const loaded = Object.fromEntries(SIGNING_SERVICES.map((service) => [service, loadEventSigning(mountedDir(manifests, service), service)]));
    const { signatureHeaders, untrustedBecause } = await import("../../packages/streams/src/jetstream/signing.ts");
    const body = new TextEncoder().encode('{"v":1,"first":1,"n":1,"at":"2026-12-07T00:00:00.000Z","path":"/a","events":[{"type":"agent/llm-request-settled","payload":{}}]}');
    const headers = new Map<string, string>(signatureHeaders(loaded["llm-driver"]!.signer, "ev.0.a", 0, body));
    headers.set("Nats-Expected-Last-Subject-Sequence", "0");
    const asHeaders = (map: Map<string, string>) => ({ get: (name: string) => map.get(name) ?? "", keys: () => [...map.keys()], values: (name: string) => (map.has(name) ? [map.get(name)!] : []) });
    const msg = { subject: "ev.0.a", data: body, headers: asHeaders(headers) };
    const reducerTrust: RecordTrust = loaded["agent-reducer"]!.trust;
    expect(untrustedBecause(reducerTrust, msg)).toBeUndefined();
    expect(headers.get(SIGNER_HEADER)).toBe("llm-driver");
    const forged = new Map<string, string>(signatureHeaders(loaded["web-gateway"]!.signer, "ev.0.a", 0, body));
    forged.set("Nats-Expected-Last-Subject-Sequence", "0");
    expect(untrustedBecause(reducerTrust, { ...msg, headers: asHeaders(forged) })).toBe('web-gateway does not emit "agent/llm-request-settled"');
    expect(forged.get(SIGNATURE_HEADER)).not.toBe(headers.get(SIGNATURE_HEADER));
  });

  it("the reducer that runs the driver mounts the driver's key too (values-driver-in-reducer.yaml)", async () => {
    const manifests = await renderChart({ valuesFiles: [join(chartDir, "values-driver-in-reducer.yaml")] });
    expect(mountedKeys(manifests, "agent-reducer")).toEqual(["agent-reducer.key", "llm-driver.key"]);
    const dir = mountedDir(manifests, "agent-reducer");
    expect(loadEventSigning(dir, "llm-driver").signer.service).toBe("llm-driver");
  });

  it("takes your own Secret (its cut-off optional) and the cut-off you name; off: no Secret, no env, no volume", async () => {
    const own = await renderChart({ set: { "eventSigning.existingSecret": "my-keys" } });
    expect(byKind(own, "Secret").map((s) => s.metadata.name)).not.toContain(SECRET);
    const sources = secretSources(projection(own, "web-gateway"));
    expect(projection(own, "web-gateway").sources).toHaveLength(2);
    expect(sources.map((s) => [s.secret.name, s.secret.optional ?? false])).toEqual([
      ["my-keys", false],
      ["my-keys", true],
    ]);
    expect(sources[1]!.secret.items).toEqual([{ key: "unsigned-before", path: "unsigned-before" }]);

    const named = await renderChart({ set: { "eventSigning.unsignedBefore": "2026-12-01T00:00:00Z" } });
    expect(Buffer.from(secretData(named)["unsigned-before"]!, "base64").toString()).toBe("2026-12-01T00:00:00Z");

    const off = await renderChart({ set: { "eventSigning.enabled": "false" } });
    expect(byKind(off, "Secret").map((s) => s.metadata.name)).not.toContain(SECRET);
    for (const service of SIGNING_SERVICES) {
      expect(projection(off, service)).toBeUndefined();
      expect(envOf(findOne(containersOf(servicePod(off, service)), (c) => c.name === service)).has("EVENT_KEYS_DIR")).toBe(false);
    }
  });

  it("given a ConfigMap of other public keys (a rotation), when rendered, then every pod mounts it whole beside the Secret, and the loader trusts its keys", async () => {
    const manifests = await renderChart({ set: { "eventSigning.otherPublicKeysConfigMap": "rotated-keys" } });
    for (const service of SIGNING_SERVICES) expect(projection(manifests, service).sources.at(-1)).toEqual({ configMap: { name: "rotated-keys" } });
    // As mounted: the ConfigMap's keys are files beside the Secret's
    const dir = mountedDir(manifests, "agent-reducer");
    const { generateKeyPairSync } = await import("node:crypto");
    const { keyIdOf } = await import("../../packages/streams/src/jetstream/signing.ts");
    const next = generateKeyPairSync("ed25519").publicKey;
    writeFileSync(join(dir, "llm-driver.next.pub"), next.export({ type: "spki", format: "pem" }));
    expect(loadEventSigning(dir, "agent-reducer").trust.retired?.get("llm-driver")?.map(keyIdOf)).toEqual([keyIdOf(next)]);
    expect(projection(await renderChart(), "agent-reducer").sources.some((s) => "configMap" in s)).toBe(false);
  });
});
