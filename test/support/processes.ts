// Real service processes for e2e and chaos tests: each service is spawned with tsx from its
// own main.ts, its output captured (and shown on failure), and it can be killed, frozen,
// thawed and started again by name.

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { registerChild } from "@agentrt/testing";
import { BUILD_STAMP, bundleOf } from "../../scripts/build-services.ts";
import { probeHttp } from "../../scripts/stack/probes.ts";

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export type ServiceName = "agent-reducer" | "llm-driver" | "capability-host" | "web-gateway" | "repo-provider";

const entryPoints: Record<ServiceName, string> = {
  "agent-reducer": "services/agent-reducer/src/main.ts",
  "llm-driver": "services/llm-driver/src/main.ts",
  "capability-host": "services/capability-host/src/main.ts",
  "web-gateway": "services/web-gateway/src/main.ts",
  "repo-provider": "examples/repo-provider/src/main.ts",
};

export interface ServiceProcessOptions {
  /** Keep every byte the process writes (a log scan needs all of it), not just the tail. */
  readonly keepAllOutput?: boolean;
  /** LOG_LEVEL unless the env sets one (default warn). */
  readonly logLevel?: string;
  /**
   * Start from the precompiled bundle (`scripts/build-services.ts`), as the quickstart and the
   * image do, instead of through tsx: a restart then takes what production's takes.
   */
  readonly fromBundle?: boolean;
  /** Node options put before the entry point (`--cpu-prof`, say). */
  readonly nodeArgs?: readonly string[];
}

/** The entry's bundle, refused when missing or older than the build's sources (run scripts/setup.sh). */
function bundleFor(entry: string): string {
  const bundle = bundleOf(entry);
  if (!existsSync(bundle) || !existsSync(BUILD_STAMP)) throw new Error(`${bundle} is not built: run scripts/setup.sh (or tsx scripts/build-services.ts)`);
  return bundle;
}

export class ServiceProcess {
  private child: ChildProcess | undefined;
  private output: string[] = [];
  private exits = 0;
  private startedAt = 0;
  private readyIncarnation = -1;
  private incarnation = 0;
  private lastExit = "";
  /** What `/readyz` last answered while waiting for readiness ("503 … start-up …" while it connects; "no answer (…)" before the ops port listens). */
  private lastReadyAnswer = "not asked";
  /** Resolves once the current incarnation's output is fully read (after it exited). */
  private outputClosed: Promise<void> = Promise.resolve();

  constructor(
    readonly name: string,
    readonly service: ServiceName,
    private readonly env: Record<string, string>,
    /** The ops port (`/readyz`), when the service has one. */
    readonly opsPort?: number,
    /** Without an ops port: a line the process prints once it is serving. */
    readonly readyPattern?: RegExp,
    private readonly options: ServiceProcessOptions = {},
  ) {}

  /** The liveness probe's status (0 when nothing answers). */
  async healthz(): Promise<number> {
    if (this.opsPort === undefined) throw new Error(`${this.name} has no ops port`);
    return fetch(`http://127.0.0.1:${this.opsPort}/healthz`).then((r) => r.status, () => 0);
  }

  /** True once this incarnation answered `/readyz`. */
  get ready(): boolean {
    return this.running && this.readyIncarnation === this.incarnation;
  }

  /** Resolves once `/readyz` answers 200 (or, without an ops port, once the process runs). */
  async waitReady(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const incarnation = this.incarnation;
    while (Date.now() < deadline) {
      if (!this.running) {
        await this.outputClosed;
        throw new Error(`${this.name} exited (${this.lastExit}) before it was ready:\n${this.logs().slice(-3000)}`);
      }
      const ok = this.opsPort !== undefined ? await this.askReady() : this.readyPattern === undefined || this.readyPattern.test(this.logs());
      if (ok) {
        if (incarnation === this.incarnation) this.readyIncarnation = incarnation;
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const last = this.opsPort === undefined ? "" : ` (/readyz last answered: ${this.lastReadyAnswer})`;
    throw new Error(`${this.name} was not ready within ${timeoutMs} ms${last}:\n${this.logs().slice(-3000)}`);
  }

  /** One `/readyz` probe (the quickstart's); its answer is kept for `status()`. */
  private async askReady(): Promise<boolean> {
    const { ok, answer } = await probeHttp(`http://127.0.0.1:${this.opsPort}/readyz`, 5_000);
    this.lastReadyAnswer = answer;
    return ok;
  }

  /**
   * Where this process stands, for a start-up that timed out: running or exited, ready or not,
   * what `/readyz` last answered (its 503 names the unmet conditions), and its output's tail.
   */
  status(tailChars = 2_000): string {
    const state = !this.running ? `exited (${this.lastExit || "never started"})` : this.ready ? "ready" : `running ${this.uptimeMs} ms, not ready`;
    const probe = this.opsPort === undefined ? `waiting for ${String(this.readyPattern)} in its output` : `/readyz: ${this.lastReadyAnswer}`;
    const output = this.logs().slice(-tailChars).trimEnd();
    return `--- ${this.name}: ${state}; ${probe}\n${output === "" ? "(no output)" : output}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get exitCount(): number {
    return this.exits;
  }

  /** Milliseconds since this incarnation started (0 when not running). */
  get uptimeMs(): number {
    return this.running ? Date.now() - this.startedAt : 0;
  }

  start(): this {
    if (this.running) throw new Error(`${this.name} is already running`);
    // One process per service (`node --import tsx`), so a signal reaches the service itself
    // and not a wrapper whose child would outlive a SIGKILL.
    const entry = join(repoRoot, entryPoints[this.service]);
    const args = [...(this.options.nodeArgs ?? []), ...(this.options.fromBundle === true ? [bundleFor(entry)] : ["--import", "tsx", entry])];
    const child = spawn(process.execPath, args, {
      cwd: repoRoot,
      env: { ...process.env, LOG_LEVEL: this.options.logLevel ?? "warn", ...this.env, ...(this.opsPort === undefined ? {} : { OPS_PORT: String(this.opsPort) }) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const capture = (data: Buffer) => {
      this.output.push(data.toString());
      if (this.options.keepAllOutput !== true && this.output.length > 400) this.output.splice(0, 200);
    };
    child.stdout?.on("data", capture);
    child.stderr?.on("data", capture);
    this.outputClosed = new Promise((resolve) => child.once("close", () => resolve()));
    // Killed with the test process however it ends (a timeout's SIGKILL included).
    registerChild(child);
    child.on("exit", (code, signal) => {
      this.exits += 1;
      this.lastExit = signal ?? `code ${code}`;
    });
    this.child = child;
    this.startedAt = Date.now();
    this.incarnation += 1;
    return this;
  }

  /** Sends a signal; SIGKILL/SIGTERM wait for the process to exit. */
  async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    // Only a terminating signal waits for the exit (a listener per freeze or thaw of a
    // long-lived process would pile up on it).
    const terminating = signal === "SIGKILL" || signal === "SIGTERM" || signal === "SIGINT";
    const exited = terminating ? new Promise<void>((resolve) => child.once("exit", () => resolve())) : undefined;
    child.kill(signal);
    await exited;
  }

  async restart(): Promise<void> {
    await this.signal("SIGKILL");
    this.start();
  }

  logs(): string {
    return this.output.join("");
  }
}

export class ProcessGroup {
  readonly all: ServiceProcess[] = [];

  // No exit hook of its own: every process is registered with @agentrt/testing's process
  // registry at start, which kills it with the test process however that ends.

  add(name: string, service: ServiceName, env: Record<string, string>, opsPort?: number, readyPattern?: RegExp, options?: ServiceProcessOptions): ServiceProcess {
    const proc = new ServiceProcess(name, service, env, opsPort, readyPattern, options);
    this.all.push(proc);
    return proc;
  }

  byService(service: ServiceName): ServiceProcess[] {
    return this.all.filter((p) => p.service === service);
  }

  logs(): string {
    return this.all.map((p) => `----- ${p.name} -----\n${p.logs()}`).join("\n");
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.all.map(async (p) => {
      await p.signal("SIGCONT");
      await p.signal("SIGKILL");
    }));
  }
}

/**
 * Waits for a started process to be ready as its supervisor (Kubernetes) would: a service that
 * fails fast at start-up — NATS still electing leaders after a node died, a fresh R3 cluster —
 * is started again after a one-second back-off. Each such crash is reported to `onCrash`.
 * `deadline` (epoch ms) bounds all attempts together.
 */
export async function waitReadySupervised(proc: ServiceProcess, onCrash: (what: string) => void, attempts = 10, deadline?: number): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      // Each attempt may take 120 s, unless the caller set an overall deadline.
      await proc.waitReady(deadline === undefined ? 120_000 : Math.max(0, deadline - Date.now()));
      return;
    } catch (error) {
      if (proc.running || attempt >= attempts) throw error;
      const text = String(error);
      onCrash(`${proc.name}: ${text.split("\n").find((l) => l.includes('"level":60')) ?? text.slice(0, 300)}`);
      await new Promise((r) => setTimeout(r, 1_000));
      proc.start();
    }
  }
}
