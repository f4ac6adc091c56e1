// Issue #13, order-independent start: a service whose NATS is not up yet waits for it instead
// of failing its start-up (in a pod, NATS and the services start in any order).

import { startNatsServer, type NatsServer } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats } from "../src/index.ts";

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
  await server.kill("SIGTERM");
});
afterAll(async () => {
  await server?.stop();
});

describe("connectNats", () => {
  it("waits for a NATS that starts after the service", async () => {
    let connected = false;
    const connecting = connectNats({ url: server.url, name: "late-nats-test" }).then((nc) => {
      connected = true;
      return nc;
    });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(connected).toBe(false);
    await server.restart();
    const nc = await connecting;
    expect(nc.isClosed()).toBe(false);
    await nc.flush();
    await nc.close();
  });
});
