// Restate as its docs build a chat agent: a virtual object per agent whose `turn` handler keeps
// the conversation in the object's state and journals the model call with `ctx.run`; the
// server (restate-server 1.7, data in a temp dir), this endpoint and the ingress client all
// run inside a network namespace with only loopback (the orchestrator starts this runner
// there), so the default ports are free and the server's update check goes nowhere. The
// model is reached through the fake model's Unix socket. A turn is sent (`objectSendClient`:
// it returns once the invocation is durably accepted; the marker is its idempotency key, which
// is also what lets the client attach to the result) and then attached to for its result,
// which the server has journaled by then. The kill column SIGKILLs the endpoint mid-stream
// and starts it again; the server retries the invocation by itself.

import "../with-resolvers.ts";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { arch, platform, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { Agent, fetch as undiciFetch } from "undici";
import * as restate from "@restatedev/restate-sdk";
import * as clients from "@restatedev/restate-sdk-clients";
import { callModel, type ChatMessage } from "../model-call.ts";
import { type Contender, nowMs, runContender, until } from "../runner.ts";

const ENDPOINT_PORT = 9080;
const ADMIN = "http://127.0.0.1:9070";
const INGRESS = "http://127.0.0.1:8080";

function agentObject(client: OpenAI) {
  return restate.object({
    name: "agent",
    handlers: {
      turn: async (ctx: restate.ObjectContext, content: string): Promise<string> => {
        const history = (await ctx.get<ChatMessage[]>("messages")) ?? [];
        const messages: ChatMessage[] = [...history, { role: "user", content }];
        const reply = await ctx.run("model", () => callModel(client, messages));
        ctx.set("messages", [...messages, { role: "assistant", content: reply }]);
        return reply;
      },
    },
  });
}
type AgentObject = ReturnType<typeof agentObject>;

if (process.argv.includes("--endpoint")) {
  const socketPath = process.argv[process.argv.indexOf("--endpoint") + 1]!;
  const dispatcher = new Agent({ connect: { socketPath } });
  const client = new OpenAI({
    baseURL: "http://127.0.0.1/v1",
    apiKey: "test",
    fetch: ((url: string, init: object) => undiciFetch(url, { ...init, dispatcher })) as unknown as typeof fetch,
  });
  await restate.serve({ services: [agentObject(client)], port: ENDPOINT_PORT });
} else {
  await runContender(async (config) => {
    const dataDir = mkdtempSync(join(tmpdir(), "agentrt-peers-restate-"));
    // The binary ships in the platform package that @restatedev/restate-server depends on.
    const wrapper = createRequire(import.meta.url).resolve("@restatedev/restate-server/package.json");
    const serverBin = createRequire(wrapper).resolve(`@restatedev/restate-server-${platform()}-${arch()}/bin/restate-server`);
    const server = spawn(serverBin, ["--no-logo", "--node-name", "peers"], { cwd: dataDir, env: { ...process.env, RESTATE_LOG_FILTER: "error" }, stdio: "ignore" });
    const startEndpoint = (): ChildProcess =>
      spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--endpoint", config.modelSocket], { stdio: "ignore" });
    let endpoint = startEndpoint();
    const up = (url: string) => fetch(url).then((r) => r.ok, () => false);
    if (!(await until(() => up(`${ADMIN}/health`), 120_000, 100))) throw new Error("restate-server did not become healthy");
    if (!(await until(async () => (await fetch(`${ADMIN}/deployments`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ uri: `http://127.0.0.1:${ENDPOINT_PORT}`, force: true }) }).catch(() => undefined))?.ok === true, 120_000, 200))) {
      throw new Error("could not register the endpoint");
    }
    const ingress = clients.connect({ url: INGRESS });
    const agentDef = { name: "agent" } as AgentObject;
    // The first calls after registration can race the deployment's propagation to the ingress.
    await until(async () => (await ingress.objectClient(agentDef, "probe").turn("mk-probe").then(() => true, () => false)), 60_000, 200);
    const send = (agent: string, marker: string) => ingress.objectSendClient(agentDef, agent).turn(marker, clients.rpc.sendOpts({ idempotencyKey: marker }));
    const contender: Contender = {
      async pids() {
        return [server.pid, endpoint.pid].filter((p): p is number => p !== undefined);
      },
      async createAgent() {},
      async turn(agent, marker) {
        const handle = await send(agent, marker);
        const acceptedAt = nowMs();
        await ingress.result(handle);
        return { acceptedAt, storedAt: nowMs() };
      },
      async killMidReply(agent, marker, modelReceived) {
        const handle = await send(agent, marker);
        await modelReceived;
        await new Promise((r) => setTimeout(r, 100));
        const exited = new Promise<void>((resolve) => endpoint.once("exit", () => resolve()));
        endpoint.kill("SIGKILL");
        await exited;
        const killAt = nowMs();
        endpoint = startEndpoint();
        const stored = await Promise.race([ingress.result(handle).then(() => nowMs()), new Promise<undefined>((r) => setTimeout(() => r(undefined), 120_000))]);
        return stored === undefined ? { note: "reply not stored within 120 s" } : { recoveredMs: stored - killAt, note: "endpoint SIGKILLed and started again at once" };
      },
      async stop() {
        endpoint.kill("SIGKILL");
        server.kill("SIGKILL");
        await new Promise((r) => server.once("exit", r));
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
    return contender;
  });
}
