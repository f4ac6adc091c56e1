// Ports for test servers and services come from below the kernel's ephemeral range, where no
// outgoing connection's local port can take one between the probe and the bind (or while a
// killed service is down before its restart on the same port).
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { expect, it } from "vitest";
import { freeLoopbackPorts } from "../src/nats/ports.ts";

const rangeStart = (() => {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
  } catch {
    return undefined;
  }
})();

it.skipIf(rangeStart === undefined || rangeStart < 11_000)("given the ephemeral range is known, when ports are chosen, then each is below it and can be listened on", async () => {
  const ports = await freeLoopbackPorts(20);
  expect(new Set(ports).size).toBe(20);
  for (const port of ports) {
    expect(port).toBeGreaterThanOrEqual(10_000);
    expect(port).toBeLessThan(rangeStart as number);
    await new Promise<void>((resolve, reject) => {
      const server = createServer();
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => server.close(() => resolve()));
    });
  }
});
