// Applies the seeded fault schedule to a running system: each fault lands on a replica that can
// take it (a serving one, never the last serving replica of its service, one NATS node down at
// a time), runs its course (a frozen process is thawed, a killed one restarted) in the
// background, and is recorded with the moment it was injected.

import { type NatsCluster, waitFor } from "@agentrt/testing";
import { type ServiceName, type ServiceProcess, waitReadySupervised } from "../support/processes.ts";
import type { System } from "../support/system.ts";
import { injectServerErrors, injectStall } from "./model.ts";
import type { FaultKind, ScheduledFault } from "./schedule.ts";

export interface InjectedFault {
  readonly kind: FaultKind;
  readonly at: number;
  readonly victim: string;
  /** When the victim was serving again (restarted and ready, thawed, node back). */
  recoveredAt?: number;
}

const serviceOf: Partial<Record<FaultKind, ServiceName>> = {
  "driver-kill": "llm-driver",
  "driver-freeze": "llm-driver",
  "reducer-kill": "agent-reducer",
  "reducer-freeze": "agent-reducer",
  "host-kill": "capability-host",
  "host-freeze": "capability-host",
  "gateway-restart": "web-gateway",
};

export class FaultInjector {
  readonly injected: InjectedFault[] = [];
  readonly skipped: Partial<Record<FaultKind, number>> = {};
  /** Victims whose fault is still running its course. */
  private readonly busy = new Set<string>();
  private readonly pending = new Set<Promise<void>>();
  private stopped = false;
  readonly errors: string[] = [];
  /** What went slower than expected without failing (a node that took long to catch up). */
  readonly notes: string[] = [];

  constructor(
    private readonly system: System,
    private readonly cluster: NatsCluster,
    /** Start-up crashes so far (the system's first start-up reports here too). */
    readonly crashes: string[] = [],
  ) {}

  /** Injects one scheduled fault now (or counts it as skipped when nobody can take it). */
  inject(fault: ScheduledFault, attempt = 0): void {
    const service = serviceOf[fault.kind];
    if (service) return this.processFault(fault, service, attempt);
    if (fault.kind === "model-500") return this.record(fault.kind, "model", () => injectServerErrors(this.system.model, fault.count), true);
    if (fault.kind === "model-stall") return this.record(fault.kind, "model", () => injectStall(this.system.model), true);
    if (fault.kind === "provider-kill") {
      const provider = this.system.processes.byService("repo-provider")[0]!;
      if (this.busy.has(provider.name)) return this.skip(fault.kind, fault, attempt);
      return this.run(fault.kind, provider.name, async (entry) => {
        await provider.signal("SIGKILL");
        await delay(fault.durationMs);
        await this.startAgain(provider);
        entry.recoveredAt = Date.now();
      });
    }
    // nats-node-kill: one node at a time, and only a node whose loss leaves every stream a
    // quorum. A node is safe to kill when every other node is healthy: running, back in the
    // cluster and with each of its replicas current (`/healthz`). So a node still catching up
    // after its restart is the only one that may be killed next — killing it costs nothing
    // that the other two do not hold. The first long runs killed a second node while the first
    // was still catching up, and streams with a replica on each lost their quorum (KV buckets
    // answered "no responders" for minutes). nats-server 2.9 can leave one replica lagging for
    // minutes after a restart, so waiting for the whole cluster to be healthy instead stopped
    // all node kills three minutes into a run.
    if ([...this.busy].some((b) => b.startsWith("nats:"))) return this.skip(fault.kind, fault, attempt);
    this.busy.add("nats:checking");
    const checked = this.cluster
      .nodeHealth()
      .then((health) => {
        this.busy.delete("nats:checking");
        const safe = this.cluster.nodes.filter((_, i) => health.every((ok, j) => ok || j === i));
        if (safe.length === 0) return this.skip(fault.kind, fault, attempt);
        const node = safe[Math.floor(fault.victim * safe.length)]!;
        this.run(fault.kind, `nats:${node.serverName}`, async (entry) => {
          await node.kill("SIGKILL");
          await delay(fault.durationMs);
          const restartedAt = Date.now();
          // restart() waits 30 s for every replica on the node to be current; a lagging one is noted.
          await node.restart().catch((error: unknown) => {
            if (!node.running) throw error;
            this.notes.push(`nats:${node.serverName}: not every replica current 30 s after its restart (${String(error).split("\n")[0]})`);
          });
          await this.untilClusterHealthy(NODE_CATCH_UP_MS);
          await this.cluster.waitForMetaLeader(60_000);
          entry.recoveredAt = Date.now();
          if (entry.recoveredAt - restartedAt > 30_000) this.notes.push(`nats:${node.serverName} was back in the cluster ${Math.round((entry.recoveredAt - restartedAt) / 1000)} s after its restart`);
        });
      })
      .finally(() => this.pending.delete(checked));
    this.pending.add(checked);
  }

  private async untilClusterHealthy(timeoutMs: number): Promise<void> {
    await waitFor(() => this.cluster.healthy({ serverOnly: true }), { timeoutMs, intervalMs: 250, what: "every NATS node back in the cluster after a node's restart" });
  }

  private processFault(fault: ScheduledFault, service: ServiceName, attempt: number): void {
    const replicas = this.system.processes.byService(service);
    const serving = replicas.filter((p) => p.ready && !this.busy.has(p.name));
    // Never the last serving replica: the soak measures recovery, not a cold start of everything.
    if (serving.length < 2) return this.skip(fault.kind, fault, attempt);
    const victim = serving[Math.floor(fault.victim * serving.length)]!;
    if (fault.kind.endsWith("freeze")) {
      return this.run(fault.kind, victim.name, async (entry) => {
        await victim.signal("SIGSTOP");
        await delay(fault.durationMs);
        await victim.signal("SIGCONT");
        entry.recoveredAt = Date.now();
      });
    }
    this.run(fault.kind, victim.name, async (entry) => {
      await victim.signal("SIGKILL");
      if (fault.kind !== "gateway-restart") await delay(fault.durationMs / 4);
      await this.startAgain(victim);
      entry.recoveredAt = Date.now();
    });
  }

  private run(kind: FaultKind, victim: string, course: (entry: InjectedFault) => Promise<void>): void {
    const entry: InjectedFault = { kind, at: Date.now(), victim };
    this.injected.push(entry);
    this.busy.add(victim);
    const done = course(entry)
      .catch((error: unknown) => {
        this.errors.push(`${kind} on ${victim}: ${String(error)}`);
      })
      .finally(() => {
        this.busy.delete(victim);
        this.pending.delete(done);
      });
    this.pending.add(done);
  }

  private record(kind: FaultKind, victim: string, act: () => void, instant: boolean): void {
    act();
    this.injected.push({ kind, at: Date.now(), victim, ...(instant ? { recoveredAt: Date.now() } : {}) });
  }

  /**
   * Nobody can take the fault now (every other replica is still down or frozen): try again
   * shortly, for up to thirty seconds, so every kind is injected even when faults pile up (on a
   * loaded machine a killed service needs 10–30 s to serve again).
   */
  private skip(kind: FaultKind, fault?: ScheduledFault, attempt = 0): void {
    // After the fault phase, only a kind not injected at all is still tried (every kind must land once).
    const done = this.stopped && this.injected.some((f) => f.kind === kind);
    if (fault === undefined || attempt >= 60 || done) {
      this.skipped[kind] = (this.skipped[kind] ?? 0) + 1;
      return;
    }
    const retry = delay(500).then(() => {
      this.pending.delete(retry);
      this.inject(fault, attempt + 1);
    });
    this.pending.add(retry);
  }

  /** No more retries of deferred faults (the fault phase is over), but of a kind not injected yet. */
  stop(): void {
    this.stopped = true;
  }

  /** Starts a killed process again, as its supervisor would (see `waitReadySupervised`). */
  private async startAgain(victim: ServiceProcess): Promise<void> {
    victim.start();
    await waitReadySupervised(victim, (what) => this.crashes.push(what));
  }

  /** Waits until every fault has run its course: everything thawed, restarted and ready. */
  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}


/** How long a restarted node may take to be back in the cluster before its fault counts as failed. */
const NODE_CATCH_UP_MS = 180_000;

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
