// The quickstart's process supervisor. Each child starts once everything it depends on is
// ready, and counts as ready when its probe says so (an ops port's /readyz, a TCP port, or a
// line it prints). A child that exits unexpectedly is restarted with backoff, and the output
// says so; the rest of the stack keeps running. `stop` terminates children dependents-first
// (SIGTERM, then SIGKILL after a grace period).

import { type ChildProcess, spawn } from "node:child_process";
import { log, prefixLines } from "./output.ts";
import { probeHttp, reachable } from "./probes.ts";

export type ReadyProbe =
  | { readonly kind: "http"; readonly url: string }
  | { readonly kind: "tcp"; readonly host: string; readonly port: number }
  | { readonly kind: "line"; readonly pattern: RegExp };

export interface ChildSpec {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Names of children that must be ready before this one starts. */
  readonly dependsOn: readonly string[];
  readonly ready: ReadyProbe;
}

/** Restart delay after the n-th consecutive crash: 0.5 s doubling, at most 10 s. */
export function restartDelayMs(consecutiveCrashes: number): number {
  return Math.min(10_000, 500 * 2 ** Math.max(0, consecutiveCrashes - 1));
}
/** A child that stayed up this long is healthy again: its next crash restarts quickly. */
const STABLE_AFTER_MS = 30_000;
const POLL_MS = 50;

interface Running {
  readonly spec: ChildSpec;
  process: ChildProcess | undefined;
  startedAt: number;
  crashes: number;
  ready: Promise<void>;
  markReady: () => void;
  isReady: boolean;
  restartTimer: NodeJS.Timeout | undefined;
}

export class Supervisor {
  private readonly children = new Map<string, Running>();
  private stopping = false;

  constructor(
    private readonly cwd: string,
    private readonly baseEnv: NodeJS.ProcessEnv,
    private readonly graceMs = 10_000,
    /** How often a child slow to turn ready is reported, with what its probe last answered. */
    private readonly noticeEveryMs = 10_000,
  ) {}

  /** Starts every child in dependency order; resolves once all are ready. */
  async start(specs: readonly ChildSpec[]): Promise<void> {
    const known = new Set(specs.map((s) => s.name));
    for (const spec of specs) {
      const missing = spec.dependsOn.filter((d) => !known.has(d));
      if (missing.length > 0) throw new Error(`${spec.name} depends on ${missing.join(", ")}, which the stack does not start`);
      let markReady!: () => void;
      const ready = new Promise<void>((resolve) => (markReady = resolve));
      this.children.set(spec.name, { spec, process: undefined, startedAt: 0, crashes: 0, ready, markReady, isReady: false, restartTimer: undefined });
    }
    await Promise.all(
      specs.map(async (spec) => {
        const child = this.children.get(spec.name)!;
        await Promise.all(spec.dependsOn.map((d) => this.children.get(d)!.ready));
        if (this.stopping) return;
        this.launch(child);
        await child.ready;
      }),
    );
  }

  /** Stops dependents first, then what they depend on. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    for (const child of this.children.values()) clearTimeout(child.restartTimer);
    for (const tier of this.stopTiers()) await Promise.all(tier.map((c) => this.terminate(c)));
  }

  private launch(child: Running): void {
    const { spec } = child;
    const proc = spawn(spec.command, [...spec.args], { cwd: this.cwd, env: { ...this.baseEnv, ...spec.env }, stdio: ["ignore", "pipe", "pipe"] });
    child.process = proc;
    child.startedAt = Date.now();
    const print = prefixLines(spec.name);
    let seenOutput = "";
    const onData = (chunk: Buffer) => {
      print(chunk);
      if (spec.ready.kind === "line" && !child.isReady) {
        seenOutput = (seenOutput + chunk.toString()).slice(-4_096);
        if (spec.ready.pattern.test(seenOutput)) this.becameReady(child, proc);
      }
    };
    proc.stdout?.on("data", onData);
    proc.stderr?.on("data", onData);
    proc.once("error", (error) => {
      // Cannot be spawned at all (e.g. the binary is missing): restarting will not help.
      log(`${spec.name} could not be started: ${error.message}`);
      if (!this.stopping) process.exitCode = 1;
      void this.stop();
    });
    proc.once("exit", (code, signal) => this.onExit(child, proc, code, signal));
    if (spec.ready.kind !== "line") void this.pollReady(child, proc);
  }

  private async pollReady(child: Running, proc: ChildProcess): Promise<void> {
    const probe = child.spec.ready;
    let lastNotice = Date.now();
    while (!this.stopping && child.process === proc && proc.exitCode === null && proc.signalCode === null) {
      // What an HTTP probe answered goes into the notice: a service's /readyz names what it waits for.
      const { ok, answer } =
        probe.kind === "http" ? await probeHttp(probe.url) : probe.kind === "tcp" ? { ok: await reachable(probe.host, probe.port), answer: `port ${probe.port} not accepting` } : { ok: false, answer: "" };
      if (ok) return this.becameReady(child, proc);
      if (Date.now() - lastNotice > this.noticeEveryMs) {
        lastNotice = Date.now();
        log(`still waiting for ${child.spec.name} to be ready (${((Date.now() - child.startedAt) / 1000).toFixed(0)} s${answer === "" ? "" : `; ${answer}`})`);
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  private becameReady(child: Running, proc: ChildProcess): void {
    if (child.process !== proc || this.stopping) return;
    const seconds = ((Date.now() - child.startedAt) / 1000).toFixed(2);
    log(child.isReady ? `${child.spec.name} ready again (${seconds} s after its restart)` : `${child.spec.name} ready in ${seconds} s`);
    child.isReady = true;
    child.markReady();
  }

  private onExit(child: Running, proc: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.stopping || child.process !== proc) return;
    const upMs = Date.now() - child.startedAt;
    child.crashes = upMs >= STABLE_AFTER_MS ? 1 : child.crashes + 1;
    const delayMs = restartDelayMs(child.crashes);
    log(`${child.spec.name} exited unexpectedly (${signal ?? `code ${code}`}) after ${(upMs / 1000).toFixed(1)} s; restarting it in ${(delayMs / 1000).toFixed(1)} s (restart #${child.crashes})`);
    child.restartTimer = setTimeout(() => {
      if (!this.stopping) this.launch(child);
    }, delayMs);
  }

  private async terminate(child: Running): Promise<void> {
    const proc = child.process;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    const since = Date.now();
    proc.kill("SIGTERM");
    const timer = setTimeout(() => {
      log(`${child.spec.name} did not stop within ${this.graceMs / 1000} s; killing it`);
      proc.kill("SIGKILL");
    }, this.graceMs);
    await exited;
    clearTimeout(timer);
    // A slow stop is worth seeing (Ctrl-C should be quick); a quick one is not.
    if (Date.now() - since >= 2_000) log(`${child.spec.name} took ${((Date.now() - since) / 1000).toFixed(1)} s to stop`);
  }

  /** Children grouped so that every child is stopped before anything it depends on. */
  private stopTiers(): Running[][] {
    const depth = new Map<string, number>();
    const depthOf = (name: string): number => {
      const known = depth.get(name);
      if (known !== undefined) return known;
      const deps = this.children.get(name)!.spec.dependsOn;
      const d = deps.length === 0 ? 0 : 1 + Math.max(...deps.map(depthOf));
      depth.set(name, d);
      return d;
    };
    const tiers: Running[][] = [];
    for (const child of this.children.values()) (tiers[depthOf(child.spec.name)] ??= []).push(child);
    return tiers.filter((t) => t !== undefined).reverse();
  }
}
