// The capability host, wired: the warm checker, the sandbox, the itx host functions, the
// provider registry, and the durable `capability-host` consumer of `work.script.*`. Built
// from injected clients (NATS connection, event store, logger) so main.ts and the tests wire
// the same thing.

import { birthBatch } from "@agentrt/agent-core";
import { agentCoreWrap } from "./codemode.ts";
import type { EventStore } from "@agentrt/streams";
import { consumeWork, ensureWorkStream, type WorkConsumer } from "@agentrt/service-kit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { Objm } from "@nats-io/obj";
import type { Logger } from "pino";
import { AGENT_FILES_BUCKET, AGENT_KV_BUCKET, AgentFiles, AgentKv } from "./itx/agent-storage.ts";
import { DocsIndex } from "./itx/docs-index.ts";
import { createHostCallHandler } from "./itx/host-calls.ts";
import { guardHostCalls, providerAuthority } from "./authority/script-authority.ts";
import { PROVIDERS_BUCKET, ProviderRegistry } from "./providers/registry.ts";
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits, type ScriptSandbox, WorkerSandbox, type WorkerReplacedReason } from "./sandbox/index.ts";
import { DEFAULT_SCRIPT_LIMITS, type ScriptLimits, type ScriptRunOutcome, ScriptRunner, type ScriptRunnerDeps } from "./script-runner.ts";
import { type CheckOutcome, loadItxDeclarations, ScriptChecker, type ScriptSourceParts } from "./typecheck/index.ts";

export interface CapabilityHostOptions {
  readonly nc: NatsConnection;
  readonly store: EventStore;
  readonly logger: Logger;
  readonly limits?: Partial<ScriptLimits>;
  readonly sandboxLimits?: SandboxLimits;
  /** Scripts run at once per host. */
  readonly concurrency?: number;
  readonly ackWaitMs?: number;
  readonly providerCallTimeoutMs?: number;
  readonly onTiming?: ScriptRunnerDeps["onTiming"];
  readonly onOutcome?: (outcome: ScriptRunOutcome) => void;
  /** A sandbox worker was replaced (it held a script past its deadline, or it died). */
  readonly onSandboxWorkerReplaced?: (reason: WorkerReplacedReason) => void;
  readonly tracer?: ScriptRunnerDeps["tracer"];
  /** The project whose tagged prompt file births sub-agents (`itx.agents.get(p).create()`). */
  readonly project?: ProjectBirth;
  /** JetStream replicas of the buckets and the work stream the host creates (3 in a cluster). */
  readonly replicas?: number;
}

export interface ProjectBirth {
  readonly promptFileText: string;
  readonly project: { readonly name: string; readonly slug: string };
  readonly configRepo: string;
  /** The workspace named in a new agent's boot context (default: `workspace:<stream path>`). */
  readonly workspaceOf?: (streamPath: string) => string;
}

export class CapabilityHost {
  private consumer: WorkConsumer | undefined;
  private providerSignature = "";

  private constructor(
    readonly runner: ScriptRunner,
    readonly checker: ScriptChecker,
    readonly registry: ProviderRegistry,
    private readonly docs: DocsIndex,
    private readonly sandbox: ScriptSandbox,
    private readonly options: CapabilityHostOptions,
  ) {}

  static async start(options: CapabilityHostOptions): Promise<CapabilityHost> {
    const { nc, logger } = options;
    const kvm = new Kvm(nc);
    const replicas = options.replicas ?? 1;
    const [agentKv, providersKv, files, sandbox] = await Promise.all([
      kvm.create(AGENT_KV_BUCKET, { history: 1, replicas }),
      kvm.create(PROVIDERS_BUCKET, { history: 16, replicas }),
      new Objm(nc).create(AGENT_FILES_BUCKET, { replicas }),
      // One worker thread per script that may run at once: a script computing never stalls the
      // host's heartbeats, probes or other scripts.
      WorkerSandbox.create(options.sandboxLimits ?? DEFAULT_SANDBOX_LIMITS, {
        workers: options.concurrency ?? 4,
        onWorkerReplaced: (reason, detail) => {
          logger.warn({ reason, detail }, "replaced a script sandbox worker");
          options.onSandboxWorkerReplaced?.(reason);
        },
      }),
    ]);
    const declarations = loadItxDeclarations();
    const checker = new ScriptChecker(declarations);
    // The first check loads and binds the lib files (hundreds of ms); pay it before claiming work.
    checker.check({ preamble: "", resultsPreamble: "const results = [] as const;", code: "return 1;", wrapped: "async (itx) => {\nreturn 1;\n}" }, 60_000);
    const docs = new DocsIndex(declarations);
    const registry = new ProviderRegistry(nc, providersKv, logger.child({ component: "providers" }));
    await registry.start();
    const agentFiles = new AgentFiles(files);
    const limits = { ...DEFAULT_SCRIPT_LIMITS, ...options.limits };
    // The runner needs the host's check (which refreshes provider declarations) before the host exists.
    const self: { host?: CapabilityHost } = {};
    const check = (parts: ScriptSourceParts, budgetMs: number): CheckOutcome => self.host!.check(parts, budgetMs);
    const runner = new ScriptRunner({
      store: options.store,
      sandbox,
      files: agentFiles,
      check,
      wrap: agentCoreWrap,
      limits,
      logger,
      ...(options.onTiming === undefined ? {} : { onTiming: options.onTiming }),
      ...(options.tracer === undefined ? {} : { tracer: options.tracer }),
      // Every itx call is checked against the script's authority before it runs (authority/).
      hostCalls: (caller, scope) =>
        guardHostCalls(createHostCallHandler(
          {
            store: options.store,
            kv: new AgentKv(agentKv),
            files: agentFiles,
            providers: registry,
            docs,
            providerCallTimeoutMs: options.providerCallTimeoutMs ?? 30_000,
            ...(options.project === undefined ? {} : { birthBatch: projectBirthBatch(options.project) }),
            typecheck: (code) => {
              const trimmed = code.trim();
              const parts = { preamble: scope.preamble, resultsPreamble: scope.resultsPreamble, code: trimmed, wrapped: agentCoreWrap(trimmed) };
              const outcome = check(parts, limits.typecheckBudgetMs);
              return { ok: outcome.kind !== "blocked", problems: outcome.kind === "blocked" ? [...outcome.problems] : [] };
            },
          },
          { ...caller, authority: providerAuthority(scope.authority) },
        ), scope.authority),
    });
    self.host = new CapabilityHost(runner, checker, registry, docs, sandbox, options);
    return self.host;
  }

  /** Starts claiming `work.script.*` items (durable consumer `capability-host`). */
  async consume(): Promise<void> {
    const js = jetstream(this.options.nc);
    const jsm = await jetstreamManager(this.options.nc);
    await ensureWorkStream(jsm, { replicas: this.options.replicas ?? 1 });
    this.consumer = await consumeWork(js, jsm, {
      kind: "script",
      durable: "capability-host",
      logger: this.options.logger,
      concurrency: this.options.concurrency ?? 4,
      ackWaitMs: this.options.ackWaitMs ?? 30_000,
      handler: async (item) => {
        // (not `onOutcome?.(await …)`: an optional call skips evaluating its arguments)
        const outcome = await this.runner.handle(item.streamPath, item.executionId);
        this.options.onOutcome?.(outcome);
        return { type: "ack" };
      },
    });
  }

  /** Typechecks with the live providers' declarations (refreshed when the registry changed). */
  check(parts: ScriptSourceParts, budgetMs: number): CheckOutcome {
    const live = this.registry.live();
    const signature = live.map((p) => `${p.namespace}:${p.instanceId}:${p.declarations.length}`).join("|");
    if (signature !== this.providerSignature) {
      const declarations = new Map(live.map((p) => [p.namespace, p.declarations]));
      this.checker.setProviderDeclarations(declarations);
      this.docs.rebuild(declarations);
      this.providerSignature = signature;
    }
    return this.checker.check(parts, budgetMs);
  }

  /** Claiming scripts from the work queue (readiness). */
  consuming(): boolean {
    return this.consumer?.running() ?? false;
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
    this.registry.stop();
    await this.sandbox.close();
  }
}

function projectBirthBatch(project: ProjectBirth): (streamPath: string) => ReturnType<typeof birthBatch> {
  return (streamPath) =>
    birthBatch({
      promptFileText: project.promptFileText,
      project: project.project,
      configRepo: project.configRepo,
      streamPath,
      workspace: project.workspaceOf?.(streamPath) ?? `workspace:${streamPath}`,
    });
}
