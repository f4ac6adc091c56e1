// Ports for test servers and services come from below the kernel's ephemeral range, where no
// outgoing connection's local port can take one between the probe and the bind (or while a
// killed service is down before its restart on the same port); each test worker draws from its
// own band, and a process never hands out the same port twice while the first may not be bound.
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { expect, it } from "vitest";
import { FETCH_BAD_PORTS, freeLoopbackPort, freeLoopbackPorts, portBand } from "../src/nats/ports.ts";

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

it("given vitest's worker numbers, when bands are drawn, then they are disjoint and below the ephemeral range", () => {
  const bands = [1, 2, 3, 4, 5, 6, 7, 8].map((worker) => portBand(32_768, String(worker))!);
  for (const [i, band] of bands.entries()) {
    expect(band.from).toBeGreaterThanOrEqual(10_000);
    expect(band.to).toBeLessThanOrEqual(32_768);
    expect(band.to - band.from).toBeGreaterThanOrEqual(2_000);
    if (i > 0) expect(band.from).toBeGreaterThanOrEqual(bands[i - 1]!.to);
  }
  expect(portBand(32_768, "9"), "a ninth worker shares the first's band").toEqual(bands[0]);
  expect(portBand(32_768, undefined), "outside vitest: the whole range").toEqual({ from: 10_000, to: 32_768 });
  expect(portBand(undefined, "1"), "range unknown").toBeUndefined();
  expect(portBand(10_500, "1"), "too little room below the range").toBeUndefined();
});

it.skipIf(portBand(rangeStart, process.env.VITEST_POOL_ID) === undefined)("given ports handed out and not yet bound, when more are asked for, then none is handed out twice", async () => {
  // 300 draws from one worker's band of ~2 800 ports would repeat one about fifteen times over
  // if a handed-out port could be drawn again before its server binds it.
  const ports: number[] = [];
  for (let i = 0; i < 300; i++) ports.push(await freeLoopbackPort());
  expect(new Set(ports).size).toBe(300);
  const band = portBand(rangeStart, process.env.VITEST_POOL_ID)!;
  for (const port of ports) expect(port >= band.from && port < band.to, `${port} in [${band.from}, ${band.to})`).toBe(true);
});

it.skipIf(portBand(rangeStart, "1") === undefined)("given node's fetch refuses the Fetch standard's bad ports, when a draw lands on one, then another port is handed out", async () => {
  // Node's fetch does not even try: a service on such a port could never be probed.
  for (const port of FETCH_BAD_PORTS) {
    const refused = await fetch(`http://127.0.0.1:${port}/readyz`).then(() => undefined, (error: Error) => (error.cause as Error | undefined)?.message);
    expect(refused, `fetch to ${port}`).toBe("bad port");
  }
  const poolId = process.env.VITEST_POOL_ID;
  process.env.VITEST_POOL_ID = "1"; // the band that holds 10 080
  try {
    const band = portBand(rangeStart, "1")!;
    const onBadPort = (10_080 - band.from + 0.5) / (band.to - band.from);
    let draws = 0;
    const port = await freeLoopbackPort(() => (draws++ < 3 ? onBadPort : Math.random()));
    expect(draws, "the draws landing on 10 080 were made").toBeGreaterThan(3);
    expect(port).not.toBe(10_080);
    expect(port >= band.from && port < band.to).toBe(true);
  } finally {
    if (poolId === undefined) delete process.env.VITEST_POOL_ID;
    else process.env.VITEST_POOL_ID = poolId;
  }
});
