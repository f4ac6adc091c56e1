// Free loopback ports for test servers and services. A port is chosen, probed by binding it,
// released, and handed to the process that will listen on it; a rare collision with another
// process is detected by that process failing to bind (the nats-server harness then retries
// with fresh ports).
//
// Chosen below the kernel's ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range),
// not by listen(0), which picks from that range: the range is also where every outgoing
// connection's local port comes from, so on a busy machine a port released by the probe, or
// held by a service killed and restarted on it, was taken by some client's connection before
// the service bound it again (the chaos soak saw a reducer fail to start with EADDRINUSE on its
// ops port, and every reducer fault skipped). Where the range cannot be read, listen(0) it is.

import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** Lowest port handed out below the ephemeral range (above the well-known and common service ports). */
const LOWEST = 10_000;
const PROBES = 50;

export async function freeLoopbackPort(): Promise<number> {
  const below = ephemeralRangeStart();
  if (below !== undefined && below - LOWEST >= 1_000) {
    for (let probe = 0; probe < PROBES; probe++) {
      const port = LOWEST + Math.floor(Math.random() * (below - LOWEST));
      if (await bindable(port)) return port;
    }
  }
  return await listenOnAnyPort();
}

/** Distinct free ports. */
export async function freeLoopbackPorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freeLoopbackPort());
  return [...ports];
}

function ephemeralRangeStart(): number | undefined {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : undefined;
  } catch {
    return undefined;
  }
}

/** True when nothing listens on `port` at 127.0.0.1 now (bound and released at once). */
function bindable(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A port the OS picks (from its ephemeral range). */
function listenOnAnyPort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") {
        server.close();
        reject(new Error("could not determine a free loopback port"));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}
