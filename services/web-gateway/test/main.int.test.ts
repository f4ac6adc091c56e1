// The composition root as a process: dev mode refuses a non-loopback address and announces
// itself loudly when allowed; with a keys file the gateway demands a valid key.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freeLoopbackPorts, startNatsServer, waitFor, type NatsServer, scratchDir } from "@agentrt/testing";
import { mintApiKey } from "../src/auth/keys.ts";

const root = join(import.meta.dirname, "../../..");
const main = join(root, "services/web-gateway/src/main.ts");
let nats: NatsServer;
const children: ReturnType<typeof spawn>[] = [];

function startGateway(env: Record<string, string>) {
  const child = spawn(process.execPath, ["--import", "tsx", main], {
    cwd: root,
    env: { ...process.env, NATS_URL: nats.url, UI_BUILD_ON_START: "0", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
  return { output: () => output, exited };
}

beforeAll(async () => {
  nats = await startNatsServer();
});
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await nats?.stop();
});

describe("web-gateway main", () => {
  it("refuses dev mode on a non-loopback address", { timeout: 60_000 }, async () => {
    const [http, grpc, ops] = await freeLoopbackPorts(3);
    const gw = startGateway({ AGENTRT_DEV_MODE: "1", HTTP_HOST: "0.0.0.0", HTTP_PORT: String(http), GRPC_PORT: String(grpc), OPS_PORT: String(ops) });
    expect(await gw.exited).toBe(1);
    expect(gw.output()).toContain("only allowed on loopback");
  });

  it("announces dev mode loudly and serves without a key on loopback", { timeout: 60_000 }, async () => {
    const [http, grpc, ops] = (await freeLoopbackPorts(3)) as [number, number, number];
    const gw = startGateway({ AGENTRT_DEV_MODE: "1", HTTP_PORT: String(http), GRPC_PORT: String(grpc), OPS_PORT: String(ops) });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${ops}/readyz`).catch(() => undefined))?.ok === true, { timeoutMs: 45_000, what: "readyz" });
    expect(gw.output()).toMatch(/AGENTRT_DEV_MODE=1: the gateway is OPEN/);
    expect((await fetch(`http://127.0.0.1:${http}/v1/agents`)).status).toBe(200);
  });

  it("with a keys file, refuses a missing key and accepts a valid one", { timeout: 60_000 }, async () => {
    const { apiKey, stored } = mintApiKey([{ prefix: "/agents", verbs: ["read"] }]);
    const file = join(scratchDir("agentrt-keys-"), "keys.json");
    writeFileSync(file, JSON.stringify({ keys: [stored] }));
    const [http, grpc, ops] = (await freeLoopbackPorts(3)) as [number, number, number];
    startGateway({ AGENTRT_KEYS_FILE: file, HTTP_PORT: String(http), GRPC_PORT: String(grpc), OPS_PORT: String(ops) });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${ops}/readyz`).catch(() => undefined))?.ok === true, { timeoutMs: 45_000, what: "readyz" });
    expect((await fetch(`http://127.0.0.1:${http}/v1/agents`)).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${http}/v1/agents`, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${ops}/metrics`)).text();
    expect(metrics).toMatch(/agentrt_gateway_request_seconds_count\{[^}]*route="listAgents",status="200"\} 1/);
  });
});
