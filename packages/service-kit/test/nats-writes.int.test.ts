// Every service's NATS connection (connectNats) writes what it sends at most twice per turn of the event
// loop: commands issued from separate async steps leave the socket together, in order, and an
// idle connection's command still leaves at once. Counted at the connection's transport, against
// a real nats-server; and a plain nats.js connection, which flushes per microtask burst, is the
// baseline that shows the count can differ.

import { connect } from "@nats-io/transport-node";
import type { Msg, NatsConnection } from "@nats-io/nats-core";
import { type NatsServer, startNatsServer, testLogger } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { coalesceWrites, connectNats } from "../src/nats.ts";

let server: NatsServer;
const open: NatsConnection[] = [];

beforeAll(async () => {
  server = await startNatsServer();
});

afterAll(async () => {
  for (const nc of open) await nc.close();
  await server?.stop();
});

/** Counts the writes the connection's transport makes (nats.js internals, as coalesceWrites relies on them). */
function countWrites(nc: NatsConnection): { readonly count: number } {
  const transport = (nc as unknown as { protocol: { transport: { send(frame: Uint8Array): void } } }).protocol.transport;
  const send = transport.send.bind(transport);
  const counter = { count: 0 };
  transport.send = (frame: Uint8Array) => {
    counter.count += 1;
    send(frame);
  };
  return counter;
}

/** Ten publishes, each from its own async step (as an append, its reservation and its work item are). */
async function publishInSteps(nc: NatsConnection, subject: string): Promise<void> {
  for (let i = 0; i < 10; i += 1) {
    nc.publish(subject, String(i));
    await Promise.resolve();
  }
}

async function received(nc: NatsConnection, subject: string, count: number): Promise<{ seen: string[]; done: Promise<void> }> {
  const seen: string[] = [];
  let resolve!: () => void;
  const done = new Promise<void>((r) => (resolve = r));
  nc.subscribe(subject, {
    callback: (_error, msg: Msg) => {
      seen.push(msg.string());
      if (seen.length === count) resolve();
    },
  });
  await nc.flush();
  return { seen, done };
}

describe("NATS writes per turn of the event loop", () => {
  it("given a service connection, when ten commands are issued from ten async steps, then the first leaves at once and the other nine together, in order", async () => {
    const nc = await connectNats({ url: server.url, name: "writes-test", logger: testLogger("test") });
    open.push(nc);
    const listener = await connect({ servers: server.url });
    open.push(listener);
    const { seen, done } = await received(listener, "writes.coalesced", 10);
    const writes = countWrites(nc);
    await publishInSteps(nc, "writes.coalesced");
    await done;
    expect(seen).toEqual(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    expect(writes.count).toBe(2);
  });

  it("given a plain nats.js connection (the baseline), when the same ten commands are issued, then each async step is a write of its own", async () => {
    const nc = await connect({ servers: server.url });
    open.push(nc);
    const listener = await connect({ servers: server.url });
    open.push(listener);
    const { done } = await received(listener, "writes.plain", 10);
    const writes = countWrites(nc);
    await publishInSteps(nc, "writes.plain");
    await done;
    expect(writes.count).toBe(10);
  });

  it("given an idle service connection, when one request is made, then it is answered without waiting for anything else (the write is not held back)", async () => {
    const nc = await connectNats({ url: server.url, name: "writes-idle", logger: testLogger("test") });
    open.push(nc);
    const responder = await connect({ servers: server.url });
    open.push(responder);
    responder.subscribe("writes.echo", { callback: (_error, msg) => void msg.respond(msg.data) });
    await responder.flush();
    const started = performance.now();
    const reply = await nc.request("writes.echo", "ping", { timeout: 1_000 });
    expect(reply.string()).toBe("ping");
    expect(performance.now() - started).toBeLessThan(250);
  });

  it("given a command issued just before close(), then it still reaches the server", async () => {
    const nc = await connectNats({ url: server.url, name: "writes-close", logger: testLogger("test") });
    const listener = await connect({ servers: server.url });
    open.push(listener);
    const { seen, done } = await received(listener, "writes.last", 1);
    nc.publish("writes.last", "goodbye");
    await nc.close();
    await done;
    expect(seen).toEqual(["goodbye"]);
  });

  it("reports whether it could patch the connection (this nats.js version's internals are what it expects)", async () => {
    const nc = await connect({ servers: server.url });
    open.push(nc);
    expect(coalesceWrites(nc)).toBe(true);
    const stranger = { protocol: { sendCommand: "not a function" } } as unknown as NatsConnection;
    expect(coalesceWrites(stranger)).toBe(false);
  });
});
