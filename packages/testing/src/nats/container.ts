// Fallback for machines without a nats-server binary: start the official image through
// testcontainers, but ONLY when a container engine is reachable. testcontainers is not a
// dependency; it is imported lazily, so nothing here requires it (or Docker) to exist.

import { existsSync } from "node:fs";
import { connect } from "node:net";
import type { NatsServer } from "./server.ts";

const NATS_IMAGE = "nats:2.9.10";

function dockerSocketPath(): string | undefined {
  const host = process.env.DOCKER_HOST;
  if (host !== undefined && host.startsWith("unix://")) return host.slice("unix://".length);
  if (host !== undefined && host.length > 0) return undefined;
  for (const candidate of ["/var/run/docker.sock", `${process.env.HOME ?? ""}/.docker/run/docker.sock`, `/run/user/${process.getuid?.() ?? 0}/podman/podman.sock`]) {
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** True when a container engine answers on its socket (or DOCKER_HOST points at a TCP engine). */
export async function containerEngineAvailable(): Promise<boolean> {
  if (process.env.DOCKER_HOST !== undefined && !process.env.DOCKER_HOST.startsWith("unix://") && process.env.DOCKER_HOST.length > 0) return true;
  const socket = dockerSocketPath();
  if (socket === undefined) return false;
  return await new Promise<boolean>((resolve) => {
    const probe = connect(socket);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });
}

interface StartedContainer {
  getHost(): string;
  getMappedPort(port: number): number;
  stop(): Promise<unknown>;
  restart(): Promise<unknown>;
  exec(command: string[]): Promise<unknown>;
  getId(): string;
}

/** Starts NATS in a container, or returns undefined when no engine is reachable. */
export async function startNatsContainer(): Promise<NatsServer | undefined> {
  if (!(await containerEngineAvailable())) return undefined;
  const moduleName = "testcontainers";
  const tc = (await import(moduleName).catch(() => undefined)) as
    | { GenericContainer: new (image: string) => { withCommand(c: string[]): unknown } }
    | undefined;
  if (tc === undefined) return undefined;
  const builder = new tc.GenericContainer(NATS_IMAGE) as unknown as {
    withCommand(c: string[]): typeof builder;
    withExposedPorts(...p: number[]): typeof builder;
    start(): Promise<StartedContainer>;
  };
  const container = await builder.withCommand(["-js", "-m", "8222"]).withExposedPorts(4222, 8222).start();
  const host = container.getHost();
  const port = container.getMappedPort(4222);
  let running = true;
  return {
    url: `nats://${host}:${port}`,
    port,
    monitorPort: container.getMappedPort(8222),
    storeDir: "/tmp/nats/jetstream",
    serverName: container.getId(),
    pid: undefined,
    get running() {
      return running;
    },
    async stop() {
      running = false;
      await container.stop();
    },
    async kill(signal: NodeJS.Signals = "SIGKILL") {
      await container.exec(["kill", `-${signal.replace(/^SIG/, "")}`, "1"]);
      if (signal === "SIGKILL" || signal === "SIGTERM") running = false;
    },
    async restart() {
      await container.restart();
      running = true;
    },
    logs: () => "",
  };
}
