// The chart's NATS users: the permission file is generated from the one TS source (fresh), the
// built-in NATS is configured with it and reads each password from the users' Secret, every
// service connects as its own user, and a real nats-server running that exact file with those
// variables admits each user and refuses the gateway's user a work item.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { CHART_PROVIDER_USERS_MARKER, NATS_SERVICE_USERS, chartNatsAuthorization, chartProviderUsersTemplate, natsPasswordEnvName } from "@agentrt/service-kit";
import { startNatsServer } from "@agentrt/testing";
import { describe, expect, it } from "vitest";
import type { Manifest } from "./k8s-schema.ts";
import { byKind, containersOf, envOf, findOne, podTemplates } from "./manifests.ts";
import YAML from "yaml";
import { chartDir, helm, renderChart } from "./render.ts";

const SERVICES = ["web-gateway", "agent-reducer", "llm-driver", "capability-host"];
const authFile = readFileSync(join(chartDir, "files", "nats-authorization.conf"), "utf8");
const providerUsersTemplate = readFileSync(join(chartDir, "templates", "nats", "_provider-users.tpl"), "utf8");
/** The authorization block as the built-in NATS gets it when nats.auth.providers is empty. */
const withoutProviders = authFile.replace(`\n${CHART_PROVIDER_USERS_MARKER}`, "");
const natsConf = (manifests: readonly Manifest[]): string =>
  (findOne(byKind(manifests, "ConfigMap"), (c) => c.metadata.name === "rt-agentrt-nats-config").data as Record<string, string>)["nats.conf"]!;

/** The users' authorization block at the config's top level (the routes have one of their own, inside `cluster`). */
const usersBlock = (conf: string): string => conf.slice(conf.search(/^authorization \{/m));

function serviceEnv(manifests: readonly Manifest[], component: string) {
  const pod = findOne(podTemplates(manifests), (p) => p.component === component && p.owner.startsWith("Deployment/"));
  return envOf(findOne(containersOf(pod), (c) => c.name === component || containersOf(pod).length === 1));
}

describe("the chart's NATS users", () => {
  it("ships a permission file that matches packages/service-kit (pnpm exec tsx packages/service-kit/scripts/nats-authorization.ts --write)", () => {
    expect(authFile).toBe(chartNatsAuthorization());
    expect(providerUsersTemplate).toBe(chartProviderUsersTemplate());
    expect(authFile).not.toMatch(/password: "/);
  });

  it("by default: the built-in NATS carries the users, reads passwords from a generated Secret, and each service connects as itself", async () => {
    const manifests = await renderChart();
    const secret = findOne(byKind(manifests, "Secret"), (s) => s.metadata.name === "rt-agentrt-nats-users") as Manifest & { data: Record<string, string> };
    expect(Object.keys(secret.data).sort()).toEqual([...NATS_SERVICE_USERS].sort());
    for (const value of Object.values(secret.data)) expect(Buffer.from(value, "base64").toString()).toMatch(/^[A-Za-z][A-Za-z0-9]{31}$/);
    const conf = natsConf(manifests);
    expect(conf).toContain(withoutProviders.trim());
    expect(conf).not.toContain("provider-");
    const nats = findOne(podTemplates(manifests), (p) => p.component === "nats");
    const natsEnv = envOf(findOne(containersOf(nats), (c) => c.name === "nats"));
    for (const user of NATS_SERVICE_USERS) {
      expect(natsEnv.get(natsPasswordEnvName(user))?.valueFrom?.secretKeyRef).toEqual({ name: "rt-agentrt-nats-users", key: user });
    }
    for (const service of SERVICES) {
      const env = serviceEnv(manifests, service);
      expect(env.get("NATS_USER")?.value, service).toBe(service);
      expect(env.get("NATS_PASSWORD")?.valueFrom?.secretKeyRef, service).toEqual({ name: "rt-agentrt-nats-users", key: service });
    }
  });

  it("generated passwords start with a letter, which nats-server needs of a password it reads from its env", async () => {
    // One in six characters of randAlphaNum is a digit: five users over eight renders all starting
    // with a letter by chance is about one in a thousand.
    const generated: string[] = [];
    for (let i = 0; i < 8; i++) {
      const secret = YAML.parse(await helm(["template", `pw${i}`, chartDir, "--show-only", "templates/nats/users-secret.yaml"])) as { data: Record<string, string> };
      generated.push(...Object.values(secret.data).map((value) => Buffer.from(value, "base64").toString()));
    }
    expect(generated).toHaveLength(8 * NATS_SERVICE_USERS.length);
    expect(generated.filter((password) => !/^[A-Za-z]/.test(password))).toEqual([]);
    // Why: a password such as "4k9…" (digits, a size suffix, a digit) is not a value nats-server can parse.
    const user = NATS_SERVICE_USERS[0]!;
    process.env[natsPasswordEnvName(user)] = "4k9XyZabcdefghijklmnopqrstuvwxyz";
    try {
      await expect(startNatsServer({ extraConfig: withoutProviders, readyTimeoutMs: 5_000 })).rejects.toThrow(/could not be parsed/);
    } finally {
      delete process.env[natsPasswordEnvName(user)];
    }
  });

  it("nats.auth.enabled=false: no users, no Secret, no credentials in the services", async () => {
    const manifests = await renderChart({ set: { "nats.auth.enabled": "false" } });
    expect(byKind(manifests, "Secret").some((s) => s.metadata.name === "rt-agentrt-nats-users")).toBe(false);
    expect(natsConf(manifests)).not.toMatch(/^authorization \{/m);
    expect(natsConf(manifests)).not.toContain("users");
    for (const service of SERVICES) expect(serviceEnv(manifests, service).has("NATS_USER")).toBe(false);
  });

  it("an external NATS: services use the passwords of nats.auth.existingSecret, and none without one", async () => {
    const external = { valuesFiles: [join(chartDir, "values-external-nats.yaml")], set: { "externalNats.url": "nats://nats.messaging.svc:4222" } };
    const withSecret = await renderChart({ ...external, set: { ...external.set, "nats.auth.existingSecret": "my-nats-users" } });
    expect(byKind(withSecret, "Secret").some((s) => s.metadata.name === "rt-agentrt-nats-users")).toBe(false);
    for (const service of SERVICES) expect(serviceEnv(withSecret, service).get("NATS_PASSWORD")?.valueFrom?.secretKeyRef).toEqual({ name: "my-nats-users", key: service });
    const without = await renderChart(external);
    for (const service of SERVICES) expect(serviceEnv(without, service).has("NATS_USER")).toBe(false);
  });

  it("a real nats-server running the chart's file resolves the passwords from its env and enforces the lists", async () => {
    const passwords = Object.fromEntries(NATS_SERVICE_USERS.map((user) => [user, `pw-${user}-${Math.random().toString(36).slice(2)}`]));
    // The harness's nats-server inherits this process's env, as the pod's does from the Secret.
    for (const user of NATS_SERVICE_USERS) process.env[natsPasswordEnvName(user)] = passwords[user];
    const server = await startNatsServer({ extraConfig: withoutProviders });
    try {
      for (const user of NATS_SERVICE_USERS) await (await connect({ servers: server.url, user, pass: passwords[user], maxReconnectAttempts: 0 })).close();
      await expect(connect({ servers: server.url, user: "web-gateway", pass: "guess", maxReconnectAttempts: 0 })).rejects.toThrow(/authorization/i);
      const gateway = await connect({ servers: server.url, user: "web-gateway", pass: passwords["web-gateway"], maxReconnectAttempts: 0 });
      await expect(gateway.request("work.llm.0", "{}", { timeout: 2_000 })).rejects.toThrow(/permission/i);
      await gateway.close();
    } finally {
      await server.stop();
      for (const user of NATS_SERVICE_USERS) delete process.env[natsPasswordEnvName(user)];
    }
  });

  it("nats.auth.providers: each provider its own user, rendered as the TS source renders it, bound to its namespaces by a real nats-server", async () => {
    const providers = [
      { name: "repo", namespaces: ["repo"] },
      { name: "two", namespaces: ["alpha", "beta"] },
    ];
    const set = Object.fromEntries(
      providers.flatMap((p, i) => [[`nats.auth.providers[${i}].name`, p.name], ...p.namespaces.map((ns, j) => [`nats.auth.providers[${i}].namespaces[${j}]`, ns])]),
    ) as Record<string, string>;
    const manifests = await renderChart({ set });
    const asUsers = providers.map((p) => ({ user: `provider-${p.name}`, namespaces: p.namespaces }));
    // The template's users are the TS renderer's, byte for byte.
    const expected = chartNatsAuthorization(asUsers);
    const conf = natsConf(manifests);
    expect(conf).toContain(expected.slice(expected.indexOf("authorization {")).trim());
    const secret = findOne(byKind(manifests, "Secret"), (s) => s.metadata.name === "rt-agentrt-nats-users") as Manifest & { data: Record<string, string> };
    expect(Object.keys(secret.data).sort()).toEqual([...NATS_SERVICE_USERS, "provider-repo", "provider-two"].sort());
    const natsEnv = envOf(findOne(containersOf(findOne(podTemplates(manifests), (p) => p.component === "nats")), (c) => c.name === "nats"));
    for (const { user } of asUsers) expect(natsEnv.get(natsPasswordEnvName(user))?.valueFrom?.secretKeyRef).toEqual({ name: "rt-agentrt-nats-users", key: user });

    const block = usersBlock(conf);
    const passwords: Record<string, string> = Object.fromEntries([...NATS_SERVICE_USERS, "provider-repo", "provider-two"].map((u) => [u, `pw${Math.random().toString(36).slice(2)}`]));
    for (const [user, password] of Object.entries(passwords)) process.env[natsPasswordEnvName(user)] = password;
    const server = await startNatsServer({ extraConfig: block });
    try {
      const two = await connect({ servers: server.url, user: "provider-two", pass: passwords["provider-two"], inboxPrefix: "_INBOX_provider-two", maxReconnectAttempts: 0 });
      const own = two.subscribe("agentrt.capabilities.call.beta");
      const foreign = two.subscribe("agentrt.capabilities.call.repo");
      expect(String(await Promise.race([foreign.closed, new Promise((r) => setTimeout(() => r("still open after 3 s"), 3_000))]))).toMatch(/permission/i);
      expect(own.isClosed()).toBe(false);
      await expect(two.request("agentrt.capabilities.register.repo", "{}", { timeout: 2_000 })).rejects.toThrow(/permission/i);
      await expect(two.request("agentrt.capabilities.register", "{}", { timeout: 2_000 })).rejects.toThrow(/permission/i);
      // Its own namespace's subject is its to publish on: nobody answers here, which is not a refusal.
      await expect(two.request("agentrt.capabilities.register.alpha", "{}", { timeout: 2_000 })).rejects.toThrow(/no responders/i);
      await two.close();
    } finally {
      await server.stop();
      for (const user of Object.keys(passwords)) delete process.env[natsPasswordEnvName(user)];
    }
  });

  it("nats.auth.sharedProviderUser=false: no shared provider user, in the config, the Secret or the env; a real nats-server refuses it and admits a provider's own", async () => {
    const manifests = await renderChart({ set: { "nats.auth.sharedProviderUser": "false", "nats.auth.providers[0].name": "repo", "nats.auth.providers[0].namespaces[0]": "repo" } });
    const conf = natsConf(manifests);
    expect(conf).not.toContain("capability-provider");
    expect(conf).not.toContain("agentrt: ");
    expect(conf).toContain('user: "provider-repo"');
    const secret = findOne(byKind(manifests, "Secret"), (s) => s.metadata.name === "rt-agentrt-nats-users") as Manifest & { data: Record<string, string> };
    expect(Object.keys(secret.data).sort()).toEqual([...NATS_SERVICE_USERS.filter((u) => u !== "capability-provider"), "provider-repo"].sort());
    const natsEnv = envOf(findOne(containersOf(findOne(podTemplates(manifests), (p) => p.component === "nats")), (c) => c.name === "nats"));
    expect(natsEnv.has(natsPasswordEnvName("capability-provider"))).toBe(false);

    const users = [...NATS_SERVICE_USERS, "provider-repo"];
    const passwords: Record<string, string> = Object.fromEntries(users.map((u) => [u, `pw${Math.random().toString(36).slice(2)}`]));
    for (const [user, password] of Object.entries(passwords)) process.env[natsPasswordEnvName(user)] = password;
    const server = await startNatsServer({ extraConfig: usersBlock(conf) });
    try {
      await expect(connect({ servers: server.url, user: "capability-provider", pass: passwords["capability-provider"], maxReconnectAttempts: 0 })).rejects.toThrow(/authorization/i);
      await (await connect({ servers: server.url, user: "provider-repo", pass: passwords["provider-repo"], maxReconnectAttempts: 0 })).close();
    } finally {
      await server.stop();
      for (const user of users) delete process.env[natsPasswordEnvName(user)];
    }
  });

  it("refuses a namespace served by two provider users, a name listed twice, and a name that is not one", async () => {
    await expect(
      renderChart({ set: { "nats.auth.providers[0].name": "a", "nats.auth.providers[0].namespaces[0]": "repo", "nats.auth.providers[1].name": "b", "nats.auth.providers[1].namespaces[0]": "repo" } }),
    ).rejects.toThrow(/nats\.auth\.providers\[1\]\.namespaces: "repo" is already served by provider-a/);
    await expect(
      renderChart({ set: { "nats.auth.providers[0].name": "a", "nats.auth.providers[0].namespaces[0]": "x", "nats.auth.providers[1].name": "a", "nats.auth.providers[1].namespaces[0]": "y" } }),
    ).rejects.toThrow(/nats\.auth\.providers\[1\]\.name: "a" is listed twice/);
    await expect(renderChart({ set: { "nats.auth.providers[0].name": "Bad_Name", "nats.auth.providers[0].namespaces[0]": "x" } })).rejects.toThrow(/\/nats\/auth\/providers\/0\/name': 'Bad_Name' does not match pattern/);
    await expect(renderChart({ set: { "nats.auth.providers[0].name": "a" } })).rejects.toThrow(/\/nats\/auth\/providers\/0': missing property 'namespaces'/);
  });
});
