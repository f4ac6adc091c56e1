// The quickstart's NATS users (scripts/nats-auth.ts): the generated config starts a real
// nats-server, every service user connects with its password, anonymous clients are refused,
// the gateway's user cannot publish a work item, the repo provider's own user serves only
// itx.repo, and passwords survive a restart of the stack.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { NATS_SERVICE_USERS } from "@agentrt/service-kit";
import { freeLoopbackPort, natsServerBinary, waitFor } from "@agentrt/testing";
import { afterAll, describe, expect, it } from "vitest";
import { natsUserEnv, prepareLocalNatsAuth } from "../../scripts/nats-auth.ts";

const dir = mkdtempSync(join(tmpdir(), "agentrt-quickstart-auth-"));
let server: ChildProcess | undefined;
afterAll(() => {
  server?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("the quickstart's NATS users", () => {
  it("writes a config nats-server runs with, one user per service, passwords kept across starts", async () => {
    const port = await freeLoopbackPort();
    const auth = prepareLocalNatsAuth({ dataDir: dir, port, storeDir: join(dir, "nats") });
    expect(statSync(auth.secretsPath).mode & 0o777).toBe(0o600);
    expect(prepareLocalNatsAuth({ dataDir: dir, port, storeDir: join(dir, "nats") }).env).toEqual(auth.env);
    expect(natsUserEnv(auth, "web-gateway")).toEqual({ NATS_USER: "web-gateway", NATS_PASSWORD: auth.env["web-gateway"]?.NATS_PASSWORD });
    expect(natsUserEnv(auth, "repo-provider").NATS_USER).toBe("provider-repo");
    expect(natsUserEnv(undefined, "web-gateway")).toEqual({});

    const binary = natsServerBinary();
    expect(binary, "nats-server binary").toBeDefined();
    let log = "";
    server = spawn(binary!, ["-c", auth.configPath], { stdio: ["ignore", "pipe", "pipe"] });
    server.stderr?.on("data", (d: Buffer) => (log += d.toString()));
    await waitFor(async () => connect({ servers: `nats://127.0.0.1:${port}`, ...pass(auth, "web-gateway") }).then((nc) => nc.close().then(() => true), () => false), {
      timeoutMs: 15_000,
      intervalMs: 100,
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${log}\n${readFileSync(auth.configPath, "utf8")}`);
    });

    for (const user of [...NATS_SERVICE_USERS, "provider-repo"]) {
      const nc = await connect({ servers: `nats://127.0.0.1:${port}`, ...pass(auth, user) });
      await nc.close();
    }
    await expect(connect({ servers: `nats://127.0.0.1:${port}`, maxReconnectAttempts: 0 })).rejects.toThrow(/authorization/i);
    await expect(connect({ servers: `nats://127.0.0.1:${port}`, user: "web-gateway", pass: "wrong", maxReconnectAttempts: 0 })).rejects.toThrow(/authorization/i);

    const gateway = await connect({ servers: `nats://127.0.0.1:${port}`, ...pass(auth, "web-gateway") });
    await expect(gateway.request("work.llm.0", "{}", { timeout: 2_000 })).rejects.toThrow(/permission/i);
    await gateway.close();

    // The repo provider's own user serves itx.repo and no other namespace.
    const provider = await connect({ servers: `nats://127.0.0.1:${port}`, ...pass(auth, "provider-repo") });
    const own = provider.subscribe("agentrt.capabilities.call.repo");
    const other = provider.subscribe("agentrt.capabilities.call.other");
    const outcome = await Promise.race([other.closed, new Promise((resolve) => setTimeout(() => resolve("still open after 3 s"), 3_000))]);
    expect(String(outcome)).toMatch(/permission/i);
    expect(own.isClosed()).toBe(false);
    await provider.close();
  });
});

function pass(auth: ReturnType<typeof prepareLocalNatsAuth>, user: string) {
  const env = auth.env[user];
  if (env === undefined) throw new Error(`the quickstart has no NATS user ${user}`);
  return { user: env.NATS_USER, pass: env.NATS_PASSWORD, maxReconnectAttempts: 0 };
}
