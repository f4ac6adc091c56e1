// Free loopback ports for test servers. The OS picks an unused port; we release it and hand
// it to nats-server. A rare collision with another process is detected by the server failing
// to bind, and the harness then retries with fresh ports.

import { createServer } from "node:net";

export async function freeLoopbackPort(): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
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

/** Distinct free ports (one listener held per port until all are chosen, so no duplicates). */
export async function freeLoopbackPorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freeLoopbackPort());
  return [...ports];
}
