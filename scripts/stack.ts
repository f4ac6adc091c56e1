// The quickstart supervisor: `./scripts/up.sh` runs this. It uses the configured NATS
// (NATS_URL) when one answers, otherwise launches a local nats-server with JetStream and a data
// folder under the project (.data/nats), then starts every service as its own process, prints
// the web UI's URL and streams their logs. Ctrl-C stops everything.
//
// With no OPENAI_API_KEY / LLM_PROVIDERS the driver answers with the built-in offline model.

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createConnection } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type LocalNatsAuth, natsUserEnv, prepareLocalNatsAuth } from "./nats-auth.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const children: ChildProcess[] = [];
const httpPort = Number(process.env.HTTP_PORT ?? 8080);

function log(message: string): void {
  process.stdout.write(`\x1b[36m[stack]\x1b[0m ${message}\n`);
}

function hostPort(url: string): { host: string; port: number } {
  const parsed = new URL(url.split(",")[0]!.trim().replace(/^nats:/, "http:"));
  return { host: parsed.hostname, port: Number(parsed.port || 4222) };
}

function reachable(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

async function answersOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not become ready within ${timeoutMs} ms`);
}

function start(name: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const prefix = `\x1b[35m${name.padEnd(16)}\x1b[0m| `;
  const pipe = (stream: NodeJS.ReadableStream | null) =>
    stream?.on("data", (data: Buffer) => {
      for (const line of data.toString().split("\n")) if (line.trim()) process.stdout.write(prefix + line + "\n");
    });
  pipe(child.stdout);
  pipe(child.stderr);
  child.on("exit", (code, signal) => {
    if (!shuttingDown) log(`${name} exited (${signal ?? code}); stopping the stack`);
    void shutdown(code ?? 1);
  });
  children.push(child);
  return child;
}

let shuttingDown = false;
async function shutdown(code: number): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  for (const child of [...children].reverse()) child.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 1500));
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  process.exit(code);
}
process.on("SIGINT", () => void shutdown(0));
process.on("SIGTERM", () => void shutdown(0));

async function main(): Promise<void> {
  let natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
  const { host, port } = hostPort(natsUrl);
  let natsAuth: LocalNatsAuth | undefined;
  if (await reachable(host, port)) {
    log(`using NATS at ${natsUrl}`);
    log("that NATS is not started by the quickstart, so it cannot add per-service NATS users to it: services connect with the NATS_USER/NATS_PASSWORD of this environment (see docs/security.md)");
  } else if (process.env.NATS_URL) {
    throw new Error(`NATS_URL=${natsUrl} does not answer`);
  } else {
    const dataDir = join(root, ".data", "nats");
    mkdirSync(dataDir, { recursive: true });
    const localPort = Number(process.env.AGENTRT_LOCAL_NATS_PORT ?? 4222);
    log(`no NATS at ${natsUrl}; starting a local nats-server on 127.0.0.1:${localPort} (data in ${dataDir})`);
    natsAuth = prepareLocalNatsAuth({ dataDir: join(root, ".data"), port: localPort, storeDir: dataDir });
    log(`NATS users per service (least privilege); passwords in ${natsAuth.secretsPath}`);
    start("nats-server", "nats-server", ["-c", natsAuth.configPath]);
    natsUrl = `nats://127.0.0.1:${localPort}`;
    await waitFor("nats-server", () => reachable("127.0.0.1", localPort));
  }

  const common = { NATS_URL: natsUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? "info" };
  const services: Array<[string, Record<string, string>]> = [
    ["agent-reducer", { OPS_PORT: "9461" }],
    ["llm-driver", { OPS_PORT: "9462" }],
    ["capability-host", { OPS_PORT: "9463" }],
    ["web-gateway", { OPS_PORT: "9464", HTTP_PORT: String(httpPort), AGENTRT_DEV_MODE: process.env.AGENTRT_DEV_MODE ?? "1" }],
  ];
  for (const [name, env] of services) {
    const entry = join(root, "services", name, "src", "main.ts");
    if (!existsSync(entry)) throw new Error(`missing ${entry}`);
    start(name, process.execPath, ["--import", "tsx", entry], { ...common, ...env, ...natsUserEnv(natsAuth, name) });
  }
  const repoProvider = join(root, "examples", "repo-provider", "src", "main.ts");
  if (existsSync(repoProvider)) {
    // The demo's `itx.repo`: this checkout as the repository, and a folder of sample pull requests.
    start("repo-provider", process.execPath, ["--import", "tsx", repoProvider], {
      ...common,
      ...natsUserEnv(natsAuth, "repo-provider"),
      REPO_DIR: process.env.REPO_DIR ?? root,
      PULLS_DIR: process.env.PULLS_DIR ?? join(root, "examples", "repo-provider", "demo-pulls"),
    });
  }

  // Ready means every service says so on its ops port (the host, for one, warms its checker and
  // sandbox workers first), not merely that the UI's port is open.
  await Promise.all(services.map(([name, env]) => waitFor(name, () => answersOk(`http://127.0.0.1:${env.OPS_PORT}/readyz`), 120_000)));
  await waitFor("web-gateway", () => reachable("127.0.0.1", httpPort), 60_000);
  const model = process.env.OPENAI_API_KEY || process.env.LLM_PROVIDERS ? "your configured provider" : "the built-in OFFLINE model (set OPENAI_API_KEY for a real one)";
  log(`ready: open http://127.0.0.1:${httpPort}/  — agents answer with ${model}. Ctrl-C stops everything.`);
}

main().catch((error: unknown) => {
  log(`failed: ${error instanceof Error ? error.message : String(error)}`);
  void shutdown(1);
});
