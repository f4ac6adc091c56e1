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
//
// Two more ways a port could be handed out twice before anything binds it: two test workers
// probing the same port at once (each vitest worker draws from its own band of the range, by
// VITEST_POOL_ID), and one process handing out a port again before the server it was meant for
// has bound it (a port stays reserved in this process once handed out).
//
// And never a port `fetch` refuses to connect to (the Fetch standard's "bad ports"): node's
// fetch answers `bad port` without trying, so a service on one could not be probed (its
// `/readyz` never answered, and a CI run waited out its 120 s for a host serving on 10080) nor,
// for the fake model, reached by the `openai` client.

import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** Lowest port handed out below the ephemeral range (above the well-known and common service ports). */
const LOWEST = 10_000;
const PROBES = 50;
/** Test workers' bands: the range below the ephemeral one split in this many parts. */
const BANDS = 8;
/** Ports this process handed out (most recent last), not handed out again. */
const handedOut = new Set<number>();
const REMEMBERED = 1_024;
/** The Fetch standard's bad ports at or above LOWEST (the rest of that list lies below it). */
export const FETCH_BAD_PORTS: ReadonlySet<number> = new Set([10_080]);

/** A free loopback port; `random` (0 ≤ r < 1) picks where in the band to probe. */
export async function freeLoopbackPort(random: () => number = Math.random): Promise<number> {
  const band = portBand(ephemeralRangeStart(), process.env.VITEST_POOL_ID);
  if (band !== undefined) {
    for (let probe = 0; probe < PROBES; probe++) {
      const port = band.from + Math.floor(random() * (band.to - band.from));
      if (handedOut.has(port) || FETCH_BAD_PORTS.has(port) || !(await bindable(port))) continue;
      remember(port);
      return port;
    }
  }
  let port = await listenOnAnyPort();
  for (let probe = 1; probe < PROBES && handedOut.has(port); probe++) port = await listenOnAnyPort();
  remember(port);
  return port;
}

/**
 * The ports `[from, to)` this process draws from: below the ephemeral range (starting at
 * `rangeStart`), and within it a test worker's own band (`poolId` 1, 2, … as vitest numbers its
 * workers). Undefined when the range is unknown or too small to draw from.
 */
export function portBand(rangeStart: number | undefined, poolId: string | undefined): { from: number; to: number } | undefined {
  if (rangeStart === undefined || rangeStart - LOWEST < 1_000) return undefined;
  const worker = Number(poolId);
  if (!Number.isInteger(worker) || worker < 1) return { from: LOWEST, to: rangeStart };
  const width = Math.floor((rangeStart - LOWEST) / BANDS);
  const from = LOWEST + ((worker - 1) % BANDS) * width;
  return { from, to: from + width };
}

function remember(port: number): void {
  handedOut.add(port);
  if (handedOut.size > REMEMBERED) handedOut.delete(handedOut.values().next().value as number);
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
