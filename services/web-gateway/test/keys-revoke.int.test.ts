// A key revoked (or changed) in the keys file stops working at once, and the live streams it
// opened end too: each was authorized once, when it opened, and would otherwise outlive the key.
// SSE, WebSocket and gRPC alike; another key's stream on the same agent stays open.
import { connect as connectTcp } from "node:net";
import { credentials, InterceptingCall, type Interceptor, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { AgentRuntimeClient } from "@agentrt/gateway-proto";
import { testLogger, userMessage } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { applyKeys } from "../src/auth/load-keys.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";
import { enc } from "./support/http.ts";
import { openTestStore, type TestStore } from "./support/store.ts";

const PATH = "/agents/revoke/demo";
const revoked = testKey([{ prefix: "/agents/revoke", verbs: ["read"] }]);
const kept = testKey([{ prefix: "/agents/revoke", verbs: ["read"] }]);
let ts: TestStore;
let gw: TestGateway;

beforeAll(async () => {
  ts = await openTestStore();
  await ts.store.append(PATH, [{ type: "agent/created", payload: {} }, userMessage("hello")]);
  gw = await startTestGateway({ store: ts.store, keys: [revoked, kept], grpc: true });
});
afterAll(async () => {
  await gw?.close();
  await ts?.close();
});

/** An SSE stream's body: resolves once it has shown `first` events, then reports when it ends. */
async function openSse(apiKey: string): Promise<{ ended: Promise<string>; close: () => Promise<void> }> {
  const res = await fetch(`${gw.url}/v1/streams/${enc(PATH)}/subscribe?fromOffset=1&apiKey=${apiKey}`);
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  let text = "";
  while (!text.includes("id: 2")) text += new TextDecoder().decode((await reader.read()).value);
  const ended = (async () => {
    try {
      for (;;) if ((await reader.read()).done) return "ended";
    } catch {
      return "ended";
    }
  })();
  return { ended, close: () => reader.cancel() };
}

describe("a key revoked while its request arrives", () => {
  it("over HTTP, is refused once the body has arrived, and nothing is appended", async () => {
    const writer = testKey([{ prefix: "/agents/revoke", verbs: ["read", "append"] }]);
    applyKeys(gw.auth, gw.gateway.liveLimiter, testLogger("keys"))([revoked.stored, kept.stored, writer.stored]);
    const before = await ts.store.lastOffset(PATH);
    const body = JSON.stringify({ events: [userMessage("sent by a revoked key")] });
    const { hostname, port } = new URL(gw.url);
    const socket = connectTcp(Number(port), hostname);
    const answer = new Promise<string>((resolve) => {
      let text = "";
      socket.on("data", (chunk) => (text += chunk.toString()));
      socket.on("close", () => resolve(text));
      socket.on("error", () => resolve(text));
    });
    // Given the headers, with a valid key, and no body yet
    socket.write(`POST /v1/streams/${enc(PATH)}/events HTTP/1.1\r\nhost: ${hostname}:${port}\r\nauthorization: Bearer ${writer.apiKey}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // When the key is revoked, and then the body arrives
    applyKeys(gw.auth, gw.gateway.liveLimiter, testLogger("keys"))([revoked.stored, kept.stored]);
    socket.write(body);
    // Then the request is refused and the stream holds nothing more
    expect((await answer).split("\r\n")[0]).toBe("HTTP/1.1 401 Unauthorized");
    expect(await ts.store.lastOffset(PATH)).toBe(before);
  });

  it("over gRPC, is refused once the message has arrived", async () => {
    const reader = testKey([{ prefix: "/agents/revoke", verbs: ["read"] }]);
    applyKeys(gw.auth, gw.gateway.liveLimiter, testLogger("keys"))([revoked.stored, kept.stored, reader.stored]);
    // The request message sent a second after the call's metadata
    const lateMessage: Interceptor = (options, next) =>
      new InterceptingCall(next(options), {
        sendMessage: (message, send) => void setTimeout(() => send(message), 1_000),
        halfClose: (close) => void setTimeout(() => close(), 1_050),
      });
    const client = new AgentRuntimeClient(gw.grpcAddress, credentials.createInsecure(), { interceptors: [lateMessage] });
    try {
      const md = new Metadata();
      md.set("authorization", `Bearer ${reader.apiKey}`);
      const read = new Promise<number>((resolve) => client.readEvents({ streamPath: PATH, fromOffset: 1, limit: 10 }, md, (error) => resolve(error === null ? status.OK : error.code)));
      const subscribe = client.subscribe({ streamPath: PATH, fromOffset: 1, ephemeral: false }, md);
      const received: number[] = [];
      subscribe.on("data", (event: { offset: number }) => received.push(event.offset));
      const subscribed = new Promise<number>((resolve) => subscribe.on("error", (e: ServiceError) => resolve(e.code)).on("end", () => resolve(status.OK)));
      await new Promise((resolve) => setTimeout(resolve, 300));
      applyKeys(gw.auth, gw.gateway.liveLimiter, testLogger("keys"))([revoked.stored, kept.stored]);
      expect(await read).toBe(status.UNAUTHENTICATED);
      expect(await subscribed).toBe(status.UNAUTHENTICATED);
      expect(received).toEqual([]);
      expect(gw.gateway.liveLimiter.heldBy(`key:${reader.stored.id}`)).toBe(0);
    } finally {
      client.close();
    }
  });
});

describe("a revoked key's live streams", () => {
  it("end over SSE, WebSocket and gRPC, while another key's stream goes on", async () => {
    const sse = await openSse(revoked.apiKey);
    const other = await openSse(kept.apiKey);
    const ws = new WebSocket(`${gw.url.replace("http", "ws")}/v1/streams/${enc(PATH)}/ws?fromOffset=1`, { headers: { authorization: `Bearer ${revoked.apiKey}` } });
    const wsClosed = new Promise<string>((resolve) => ws.on("close", () => resolve("closed")).on("error", () => resolve("closed")));
    await new Promise<void>((resolve) => ws.once("message", () => resolve()));
    const client = new AgentRuntimeClient(gw.grpcAddress, credentials.createInsecure());
    const md = new Metadata();
    md.set("authorization", `Bearer ${revoked.apiKey}`);
    const grpc = client.subscribe({ streamPath: PATH, fromOffset: 1, ephemeral: false }, md);
    const grpcEnded = new Promise<number>((resolve) => grpc.on("error", (e: ServiceError) => resolve(e.code)).on("end", () => resolve(-1)));
    await new Promise<void>((resolve) => grpc.once("data", () => resolve()));
    expect(gw.gateway.liveLimiter.heldBy(`key:${revoked.stored.id}`)).toBe(3);

    // When the keys file no longer holds the key
    applyKeys(gw.auth, gw.gateway.liveLimiter, testLogger("keys"))([kept.stored]);

    // Then its three streams end, its slots are free, and it is refused from now on
    expect(await sse.ended).toBe("ended");
    expect(await wsClosed).toBe("closed");
    expect(await grpcEnded).toBe(status.UNAUTHENTICATED);
    expect(gw.gateway.liveLimiter.heldBy(`key:${revoked.stored.id}`)).toBe(0);
    expect((await fetch(`${gw.url}/v1/streams/${enc(PATH)}/events?fromOffset=1`, { headers: { authorization: `Bearer ${revoked.apiKey}` } })).status).toBe(401);
    // ...while the other key's stream is still open
    expect(await Promise.race([other.ended, new Promise((r) => setTimeout(() => r("open"), 300))])).toBe("open");
    expect(gw.gateway.liveLimiter.heldBy(`key:${kept.stored.id}`)).toBe(1);
    await other.close();
    client.close();
  });

  it("given a gRPC subscription still opening, when its key is revoked, then the call ends and so does the subscription, once it has opened", async () => {
    // Given a Subscribe whose subscription is slow to open (held at a gate)
    const later = testKey([{ prefix: "/agents/revoke", verbs: ["read"] }]);
    applyKeys(gw.auth, gw.gateway.liveLimiter, testLogger("keys"))([kept.stored, later.stored]);
    const api = gw.gateway.api;
    const original = api.subscribe.bind(api);
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let entered!: () => void;
    const subscribing = new Promise<void>((resolve) => (entered = resolve));
    let closed = false;
    api.subscribe = (async (...args: Parameters<typeof api.subscribe>) => {
      entered();
      await gate;
      const subscription = await original(...args);
      const close = subscription.close.bind(subscription);
      subscription.close = async () => {
        closed = true;
        await close();
      };
      return subscription;
    }) as typeof api.subscribe;
    const client = new AgentRuntimeClient(gw.grpcAddress, credentials.createInsecure());
    try {
      const md = new Metadata();
      md.set("authorization", `Bearer ${later.apiKey}`);
      const grpc = client.subscribe({ streamPath: PATH, fromOffset: 1, ephemeral: false }, md);
      const grpcEnded = new Promise<number>((resolve) => grpc.on("error", (e: ServiceError) => resolve(e.code)).on("end", () => resolve(-1)));
      grpc.on("data", () => {});
      await subscribing;
      // When the key is revoked while the subscription opens, and then it opens
      applyKeys(gw.auth, gw.gateway.liveLimiter, testLogger("keys"))([kept.stored]);
      expect(await grpcEnded).toBe(status.UNAUTHENTICATED);
      openGate();
      // Then the subscription it opened is closed, and no slot is held
      await new Promise<void>((resolve, reject) => {
        const started = Date.now();
        const check = () => (closed ? resolve() : Date.now() - started > 5_000 ? reject(new Error("the subscription opened after the revocation was never closed")) : setTimeout(check, 50));
        check();
      });
      expect(gw.gateway.liveLimiter.heldBy(`key:${later.stored.id}`)).toBe(0);
    } finally {
      api.subscribe = original;
      openGate();
      client.close();
    }
  });
});
