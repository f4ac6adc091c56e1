// One nats-server process driven from a config file: spawn, readiness via the monitoring
// endpoint (`/healthz`, which on 2.9 also reports JetStream readiness), signals, restart with
// the same ports and store. Shared by the single-server and the cluster harness.

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerChild, unregisterChild } from "../process-registry.ts";
import { waitFor } from "./wait.ts";

export interface NodeConfig {
  readonly serverName: string;
  readonly port: number;
  readonly monitorPort: number;
  /** Directory owned by this node: config file, JetStream store, log. */
  readonly dir: string;
  readonly cluster?: { readonly name: string; readonly port: number; readonly routePorts: readonly number[] };
  readonly debug?: boolean;
  /** Appended to the rendered config verbatim (e.g. an `authorization { users: [...] }` block). */
  readonly extraConfig?: string;
}

export function natsServerBinary(): string | undefined {
  if (process.env.NATS_SERVER_BIN !== undefined && existsSync(process.env.NATS_SERVER_BIN)) return process.env.NATS_SERVER_BIN;
  for (const candidate of ["/usr/sbin/nats-server", "/usr/local/bin/nats-server", "/usr/bin/nats-server"]) {
    if (existsSync(candidate)) return candidate;
  }
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir.length > 0 && existsSync(join(dir, "nats-server"))) return join(dir, "nats-server");
  }
  return undefined;
}

function renderConfig(config: NodeConfig): string {
  const lines = [
    `server_name: ${JSON.stringify(config.serverName)}`,
    `listen: "127.0.0.1:${config.port}"`,
    `http: "127.0.0.1:${config.monitorPort}"`,
    `jetstream { store_dir: ${JSON.stringify(join(config.dir, "jetstream"))} }`,
  ];
  if (config.cluster !== undefined) {
    const routes = config.cluster.routePorts.map((p) => JSON.stringify(`nats-route://127.0.0.1:${p}`));
    lines.push(
      `cluster {`,
      `  name: ${JSON.stringify(config.cluster.name)}`,
      `  listen: "127.0.0.1:${config.cluster.port}"`,
      `  routes: [${routes.join(", ")}]`,
      `}`,
    );
  }
  if (config.extraConfig !== undefined) lines.push(config.extraConfig);
  return `${lines.join("\n")}\n`;
}

export class NatsNodeProcess {
  readonly config: NodeConfig;
  private readonly binary: string;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private readonly logLines: string[] = [];
  private paused = false;

  constructor(binary: string, config: NodeConfig) {
    this.binary = binary;
    this.config = config;
    writeFileSync(this.configPath, renderConfig(config));
  }

  get configPath(): string {
    return join(this.config.dir, "nats-server.conf");
  }

  get url(): string {
    return `nats://127.0.0.1:${this.config.port}`;
  }

  get pid(): number | undefined {
    return this.running ? this.child?.pid : undefined;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The last lines the server logged, for error messages. */
  logs(): string {
    return this.logLines.join("\n");
  }

  spawn(): void {
    if (this.running) throw new Error(`nats-server ${this.config.serverName} is already running`);
    const args = ["-c", this.configPath, ...(this.config.debug === true ? ["-DV"] : [])];
    // Run from its own dir: nats-server 2.9 sometimes writes a consumer's metadata (meta.inf,
    // meta.sum) into its working directory instead of the store (seen after node restarts in the
    // chaos soak), and a test's working directory is the repository.
    const child = spawn(this.binary, args, { cwd: this.config.dir, stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    this.paused = false;
    registerChild(child);
    const keep = (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line.length === 0) continue;
        this.logLines.push(line);
        if (this.logLines.length > 200) this.logLines.shift();
      }
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    this.exited = new Promise<void>((resolve) => {
      child.once("exit", () => {
        unregisterChild(child);
        resolve();
      });
      child.once("error", (error) => {
        this.logLines.push(`spawn error: ${error.message}`);
        unregisterChild(child);
        resolve();
      });
    });
  }

  /** Resolves once `/healthz` answers ok (JetStream included); fails fast if the process dies. */
  async waitReady(timeoutMs = 15_000): Promise<void> {
    const child = this.child;
    await waitFor(
      async () => {
        if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
          throw new ProcessExitedError(`nats-server ${this.config.serverName} exited before it was ready:\n${this.logs()}`);
        }
        return await this.healthz();
      },
      { timeoutMs, intervalMs: 20, what: `nats-server ${this.config.serverName} /healthz`, failFast: (e) => e instanceof ProcessExitedError },
    );
  }

  /**
   * Whether `/healthz` answers ok: on 2.9 that includes every stream and consumer replica on the
   * node being current; with `serverOnly`, only the node's JetStream being current with the meta
   * leader (`?js-server-only=true`). False when the monitor does not answer.
   */
  async healthz(options: { serverOnly?: boolean } = {}): Promise<boolean> {
    const query = options.serverOnly === true ? "?js-server-only=true" : "";
    const response = await fetch(`http://127.0.0.1:${this.config.monitorPort}/healthz${query}`).catch(() => undefined);
    if (response === undefined) return false;
    const body = (await response.json().catch(() => ({}))) as { status?: string };
    return response.ok && body.status === "ok";
  }

  /** Sends a signal; for terminating signals, waits for the process to be gone. */
  async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (child === undefined || !this.running) return;
    if (signal === "SIGSTOP") this.paused = true;
    if (signal === "SIGCONT") this.paused = false;
    if ((signal === "SIGTERM" || signal === "SIGINT") && this.paused) {
      child.kill("SIGCONT");
      this.paused = false;
    }
    child.kill(signal);
    if (signal === "SIGKILL" || signal === "SIGTERM" || signal === "SIGINT" || signal === "SIGQUIT") {
      await this.waitExit(signal === "SIGKILL" ? 10_000 : 5_000);
    }
  }

  /** Waits for exit; escalates to SIGKILL when a graceful stop takes too long. */
  async waitExit(timeoutMs: number): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    const outcome = await Promise.race([this.exited.then(() => "exited" as const), timedOut]);
    clearTimeout(timer);
    if (outcome === "timeout" && this.running) {
      child.kill("SIGKILL");
      await this.exited;
    }
  }
}

export class ProcessExitedError extends Error {}
