// Drivers as real processes (`node --import tsx services/llm-driver/src/main.ts`: ONE process, so
// a signal reaches the driver itself, not a tsx wrapper whose child survives) on a test's
// nats-server and fake model, with their JSON log lines kept for the test to wait on.

import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { AgentEvent } from "@agentrt/contract";
import { waitFor } from "@agentrt/testing";
import { type DriverEnv, TEST_PARTITIONS } from "./driver-harness.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

export interface DriverProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly logs: Record<string, unknown>[];
  waitForLog(what: string, match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
}

/** The test's driver processes, so every one of them can be killed after each test. */
export class DriverProcesses {
  private readonly children: ChildProcess[] = [];

  constructor(private readonly env: () => DriverEnv) {}

  /** `env`: the driver's environment past the test's NATS, partitions and fake model. Resolves once it is ready. */
  async spawn(name: string, extraEnv: Record<string, string> = {}): Promise<DriverProcess> {
    const env = this.env();
    const child = spawn(process.execPath, ["--import", "tsx", join(root, "services/llm-driver/src/main.ts")], {
      cwd: root,
      env: {
        ...process.env,
        NATS_URL: env.nats.url,
        OPS_PORT: "0",
        PARTITION_COUNT: String(TEST_PARTITIONS),
        LLM_PROVIDERS: JSON.stringify({ openai: env.providers.openai }),
        LOG_LEVEL: "info",
        ...extraEnv,
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    this.children.push(child);
    const logs: Record<string, unknown>[] = [];
    createInterface({ input: child.stdout! }).on("line", (line) => {
      try {
        logs.push({ driver: name, ...(JSON.parse(line) as Record<string, unknown>) });
      } catch {
        logs.push({ driver: name, raw: line });
      }
    });
    const proc: DriverProcess = {
      name,
      child,
      logs,
      waitForLog: (what, match, timeoutMs = 20_000) => waitFor(() => logs.find(match), { timeoutMs, what: `${name}: ${what}` }),
    };
    // Process start-up (tsx transpiling the service) is slow on a loaded machine.
    await proc.waitForLog("ready", (l) => l.msg === "llm-driver ready", 90_000);
    return proc;
  }

  /** Kills every driver still running (a frozen one is woken first, so the kill lands). */
  killAll(): void {
    for (const child of this.children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGCONT");
        child.kill("SIGKILL");
      }
    }
  }
}

/** The driver process that claimed request R (it logs "driving request" before calling the model), of `path` when given. */
export async function claimant(drivers: readonly DriverProcess[], R: number, path?: string): Promise<DriverProcess> {
  const line = await waitFor(() => drivers.flatMap((d) => d.logs).find((l) => l.msg === "driving request" && l.requestOffset === R && (path === undefined || l.streamPath === path)), {
    what: `a driver to claim ${path ?? ""}@${R}`,
  });
  return drivers.find((d) => d.name === line.driver)!;
}

/** Resolves once the first reply chunk after `fromOffset` is stored. */
export async function firstChunk(env: DriverEnv, path: string, fromOffset: number): Promise<void> {
  const live = env.store.subscribe(path, { fromOffset, ephemeral: true });
  for await (const event of live) if (event.type === "agent/llm-response-chunks") break;
  await live.close();
}

/** Request R's settlements and assistant items in a stream. */
export function outcomeFor(events: readonly AgentEvent[], R: number) {
  return {
    settled: events.filter((e) => e.type === "agent/llm-request-settled" && e.payload.requestOffset === R),
    assistant: events.filter((e) => e.type === "agents/context-added" && e.payload.role === "assistant" && e.payload.llmRequestOffset === R),
  };
}
