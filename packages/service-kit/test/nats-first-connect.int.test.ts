// Issue #13, order-independent start: a service whose NATS is not up yet waits for it instead
// of failing its start-up (in a pod, NATS and the services start in any order), and says so in
// its log while it waits, with any credentials in the URL left out.

import { startNatsServer, type NatsServer } from "@agentrt/testing";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats, FIRST_CONNECT_NOTICE_MS, serversWithoutCredentials, withoutCredentials } from "../src/index.ts";

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

  it("logs that it is still waiting, without the URL's password, until NATS answers", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(line) });
    await server.kill("SIGTERM");
    const withPassword = server.url.replace("nats://", "nats://svc:s3cret@");
    const connecting = connectNats({ url: withPassword, name: "late-nats-notice-test", logger });
    await new Promise((resolve) => setTimeout(resolve, FIRST_CONNECT_NOTICE_MS + 1_000));
    const notices = lines.map((line) => JSON.parse(line) as { msg: string; servers: string[]; connection: string; waitingMs: number });
    expect(notices.length).toBeGreaterThanOrEqual(1);
    expect(notices[0]).toMatchObject({ msg: "NATS has not answered yet; still trying to connect", connection: "late-nats-notice-test", servers: [server.url.replace("nats://", "nats://***@")] });
    expect(notices[0]!.waitingMs).toBeGreaterThanOrEqual(FIRST_CONNECT_NOTICE_MS);
    expect(lines.join("")).not.toContain("s3cret");
    await server.restart();
    const nc = await connecting.catch((error: unknown) => {
      throw new Error(`connect failed: ${String(error)}`);
    });
    const stillTrying = () => lines.filter((line) => line.includes("still trying")).length;
    const atConnect = stillTrying();
    await new Promise((resolve) => setTimeout(resolve, FIRST_CONNECT_NOTICE_MS + 500));
    expect(stillTrying(), "no notice once connected").toBe(atConnect);
    await nc.close();
  }, 30_000);
});

describe("withoutCredentials", () => {
  it("given server URLs with and without user info, when made loggable, then only the user info is replaced", () => {
    expect(withoutCredentials("nats://user:pw@10.0.0.1:4222")).toBe("nats://***@10.0.0.1:4222");
    expect(withoutCredentials("tls://token@nats.example:4222")).toBe("tls://***@nats.example:4222");
    expect(withoutCredentials("user:pw@127.0.0.1:4222")).toBe("***@127.0.0.1:4222");
    expect(withoutCredentials("nats://127.0.0.1:4222")).toBe("nats://127.0.0.1:4222");
  });

  it("given a NATS_URL of several servers, when made loggable, then each server's user info is replaced", () => {
    expect(serversWithoutCredentials("nats://a:pw@n1:4222, nats://n2:4222,tls://tok@n3:4222")).toBe("nats://***@n1:4222,nats://n2:4222,tls://***@n3:4222");
  });
});
