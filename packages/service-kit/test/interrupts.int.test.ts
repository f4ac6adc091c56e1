// The interrupt protocol on a real nats-server: both ends parse with the one schema, a
// malformed request is refused with an error that names the field, and a malformed request
// never leaves the sender.
import { connect } from "@nats-io/transport-node";
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { type NatsServer, startNatsServer, testLogger } from "@agentrt/testing";
import { ContractViolationError } from "@agentrt/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INTERRUPT_SUBJECT, type InterruptRequest, parseInterruptReply, requestInterrupt, serveInterrupts } from "../src/index.ts";

const logger = testLogger("test");
let server: NatsServer;
let driver: NatsConnection;
let reducer: NatsConnection;
let serving: Subscription;
const heard: InterruptRequest[] = [];

beforeAll(async () => {
  server = await startNatsServer();
  driver = await connect({ servers: server.url });
  reducer = await connect({ servers: server.url });
  serving = serveInterrupts(
    driver,
    (request) => {
      heard.push(request);
      if (request.streamPath === "/agents/running") return { partialText: "half an ans" };
      if (request.streamPath === "/agents/running-empty") return { partialText: "" };
      return undefined;
    },
    logger,
  );
  await driver.flush();
});

afterAll(async () => {
  serving.unsubscribe();
  await driver.close();
  await reducer.close();
  await server.stop();
});

describe("the interrupt protocol", () => {
  it("returns the running driver's partial text, and nothing when no driver runs the request", async () => {
    await expect(requestInterrupt(reducer, { streamPath: "/agents/running", requestOffset: 7 }, { timeoutMs: 2_000 })).resolves.toBe("half an ans");
    await expect(requestInterrupt(reducer, { streamPath: "/agents/running-empty", requestOffset: 7 }, { timeoutMs: 2_000 })).resolves.toBeUndefined();
    await expect(requestInterrupt(reducer, { streamPath: "/agents/idle", requestOffset: 7 }, { timeoutMs: 300 })).resolves.toBeUndefined();
    expect(heard).toContainEqual({ streamPath: "/agents/idle", requestOffset: 7 });
  });

  it("refuses a malformed request on the driver's side with an error naming the field", async () => {
    const before = heard.length;
    const reply = await reducer.request(INTERRUPT_SUBJECT, JSON.stringify({ streamPath: "/agents/running", requestOffset: -1 }), { timeout: 2_000 });
    const parsed = parseInterruptReply(reply.json());
    expect(parsed).toEqual({ error: { code: "invalid_interrupt", message: expect.stringContaining("requestOffset") } });
    const extra = parseInterruptReply((await reducer.request(INTERRUPT_SUBJECT, JSON.stringify({ streamPath: "/agents/running", requestOffset: 3, force: true }), { timeout: 2_000 })).json());
    expect(extra).toEqual({ error: { code: "invalid_interrupt", message: expect.stringContaining("force") } });
    const notJson = parseInterruptReply((await reducer.request(INTERRUPT_SUBJECT, "stop!", { timeout: 2_000 })).json());
    expect(notJson).toEqual({ error: { code: "invalid_interrupt", message: "Invalid interrupt request: the body is not JSON." } });
    const badPath = parseInterruptReply((await reducer.request(INTERRUPT_SUBJECT, JSON.stringify({ streamPath: "agents running", requestOffset: 3 }), { timeout: 2_000 })).json());
    expect(badPath).toEqual({ error: { code: "invalid_interrupt", message: expect.stringContaining('must start with "/"') } });
    // The handler (which would have stopped a model call) never saw any of them.
    expect(heard.length).toBe(before);
  });

  it("refuses a malformed request on the sender's side before anything is sent", async () => {
    const before = heard.length;
    const sending = requestInterrupt(reducer, { streamPath: "/agents/running", requestOffset: 0 }, { timeoutMs: 2_000 });
    await expect(sending).rejects.toBeInstanceOf(ContractViolationError);
    await expect(sending).rejects.toMatchObject({ code: "invalid_interrupt", message: expect.stringContaining("requestOffset") });
    await driver.flush();
    await reducer.flush();
    expect(heard.length).toBe(before);
  });

  it("turns a refusal or a malformed reply into an error on the sender's side", async () => {
    const rogue = await connect({ servers: server.url });
    const sub = rogue.subscribe(INTERRUPT_SUBJECT, {
      callback: (_error, msg) => {
        const { streamPath } = msg.json<{ streamPath: string }>();
        msg.respond(streamPath === "/agents/refused" ? JSON.stringify({ error: { code: "invalid_interrupt", message: "no" } }) : JSON.stringify({ partial: 42 }));
      },
    });
    await rogue.flush();
    try {
      await expect(requestInterrupt(reducer, { streamPath: "/agents/refused", requestOffset: 1 }, { timeoutMs: 2_000 })).rejects.toMatchObject({
        code: "invalid_interrupt",
        message: "The interrupt was refused (invalid_interrupt): no",
      });
      await expect(requestInterrupt(reducer, { streamPath: "/agents/garbled", requestOffset: 1 }, { timeoutMs: 2_000 })).rejects.toMatchObject({
        code: "invalid_interrupt",
        message: expect.stringMatching(/^Invalid interrupt reply: /),
      });
    } finally {
      sub.unsubscribe();
      await rogue.close();
    }
  });
});
