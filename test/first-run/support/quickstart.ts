// Runs the README's start command (`./scripts/up.sh`) in a checkout as a user would, pointed at
// a given NATS and free loopback ports, and talks to the result over the HTTP API only.

import { type ChildProcess, spawn } from "node:child_process";
import { freeLoopbackPorts } from "@agentrt/testing";

export interface RunningQuickstart {
  readonly httpUrl: string;
  readonly opsPorts: readonly number[];
  /** The process group of up.sh and every process it started. */
  readonly pgid: number;
  /** Everything the stack printed so far. */
  output(): string;
  /** Resolves when the stack prints its ready line; rejects if it exits first or the deadline passes. */
  ready(timeoutMs: number): Promise<void>;
  /** SIGTERM (as Ctrl-C would), then the exit code; rejects if it does not exit in time. */
  stop(timeoutMs: number): Promise<number | null>;
  /** Kills the whole process group; for cleanup after a failure. */
  kill(): void;
}

export async function startQuickstart(dir: string, natsUrl: string): Promise<RunningQuickstart> {
  const [http, grpc, reducer, driver, host, gateway] = (await freeLoopbackPorts(6)) as [number, number, number, number, number, number];
  const child: ChildProcess = spawn("./scripts/up.sh", [], {
    cwd: dir,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      NATS_URL: natsUrl,
      HTTP_PORT: String(http),
      GRPC_PORT: String(grpc),
      REDUCER_OPS_PORT: String(reducer),
      DRIVER_OPS_PORT: String(driver),
      HOST_OPS_PORT: String(host),
      GATEWAY_OPS_PORT: String(gateway),
      LOG_LEVEL: "warn",
      OPENAI_API_KEY: "",
      LLM_PROVIDERS: "",
      FORCE_COLOR: "0",
    },
  });
  let out = "";
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    httpUrl: `http://127.0.0.1:${http}`,
    opsPorts: [reducer, driver, host, gateway],
    pgid: child.pid!,
    output: () => out,
    async ready(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!/\[stack\]\S* ready in [\d.]+ s/.test(out)) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`up.sh exited (${child.exitCode ?? child.signalCode}) before ready:\n${out.slice(-4_000)}`);
        if (Date.now() > deadline) throw new Error(`up.sh not ready within ${timeoutMs} ms:\n${out.slice(-4_000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop(timeoutMs) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`up.sh did not stop within ${timeoutMs} ms:\n${out.slice(-2_000)}`)), timeoutMs)));
      try {
        return await Promise.race([exited, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    kill() {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    },
  };
}

/** Calls the gateway's JSON API (dev mode: no key), throwing with the body on a non-2xx. */
export async function api(baseUrl: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status}: ${text}`);
  return JSON.parse(text);
}
