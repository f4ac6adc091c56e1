// A capability host as a real process (`main.ts` under tsx, as the quickstart runs it) for the
// tests that need one: its ops port, its pino log lines (parsed from stdout), and signals.

import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freeLoopbackPort, waitFor } from "@agentrt/testing";

const HOST_MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

export interface LogLine {
  readonly msg?: string;
  readonly time?: number;
  readonly [key: string]: unknown;
}

export interface HostProcess {
  readonly child: ChildProcess;
  readonly opsPort: number;
  /** performance.now() just before the spawn. */
  readonly spawnedAt: number;
  readonly logs: LogLine[];
  /** Polls `/readyz` until 200; resolves with ms since spawn. */
  waitReady(timeoutMs?: number): Promise<number>;
  waitLog(msg: string, count?: number, timeoutMs?: number): Promise<LogLine[]>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function startHostProcess(natsUrl: string, env: Record<string, string> = {}): Promise<HostProcess> {
  const opsPort = await freeLoopbackPort();
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, ["--import", "tsx", HOST_MAIN], {
    env: { ...process.env, NATS_URL: natsUrl, OPS_PORT: String(opsPort), PARTITION_COUNT: "4", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: LogLine[] = [];
  let partial = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    const lines = (partial + chunk.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line) as LogLine);
      } catch {
        // not a log line
      }
    }
  });
  child.stderr?.resume();
  const host: HostProcess = {
    child,
    opsPort,
    spawnedAt,
    logs,
    async waitReady(timeoutMs = 60_000) {
      await waitFor(
        async () => {
          if (child.exitCode !== null) throw new Error(`the host exited with ${child.exitCode}`);
          return fetch(`http://127.0.0.1:${opsPort}/readyz`).then((r) => r.ok, () => false);
        },
        { timeoutMs, intervalMs: 20, what: "host /readyz", failFast: () => true },
      );
      return performance.now() - spawnedAt;
    },
    async waitLog(msg, count = 1, timeoutMs = 60_000) {
      return waitFor(() => {
        const found = logs.filter((l) => l.msg === msg);
        return found.length >= count ? found : undefined;
      }, { timeoutMs, intervalMs: 20, what: `${count}× log "${msg}"` });
    },
    async kill(signal = "SIGKILL") {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill(signal);
      await exited;
    },
  };
  return host;
}
