// The gRPC port before any key is checked: a call with no valid key is answered as soon as its
// metadata arrives, never after reading its message; a message larger than HTTP's body limit is
// refused from its length prefix; a request that stops arriving ends its call; a connection with
// no call is closed. Spoken to with node's raw HTTP/2 client, as an attacker would: a probe sent
// 4 MiB − 1 KiB of each of 800 such calls from no key and took the gateway to 3.6 GB.

import { connect, constants, type ClientHttp2Session } from "node:http2";
import { credentials, Metadata, type ServiceError } from "@grpc/grpc-js";
import { AgentRuntimeClient, AppendEventsRequest } from "@agentrt/gateway-proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";

const METHOD = "/agentrt.v1.AgentRuntime/AppendEvents";
const key = testKey([{ prefix: "/agents/grpc-hard", verbs: ["append", "read"] }]);
// Two calls' worth of tokens, and none back for a long while.
const twoCalls = testKey([{ prefix: "/agents/grpc-hard", verbs: ["read"] }], { perSecond: 0.001, burst: 2 });
let ts: TestStore;
let gw: TestGateway;

beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, keys: [key, twoCalls], grpc: true, grpcOptions: { maxRequestBytes: 65_536, requestTimeoutMs: 500, idleConnectionMs: 500 } });
});
afterAll(async () => {
  await gw?.close();
  await ts?.close();
});

/** A gRPC message's 5-byte prefix declaring `length` bytes, then `sent` of them. */
function partialMessage(length: number, sent: number): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(length, 1);
  return Buffer.concat([prefix, Buffer.alloc(sent, 0x41)]);
}

interface Answer {
  grpcStatus: string | undefined;
  message: string | undefined;
  ms: number;
}

/** Opens one call, writes `body` without ending it, and waits for the server's status. */
function callAndStall(session: ClientHttp2Session, body: Buffer, authorization?: string): Promise<Answer> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: "POST",
      [constants.HTTP2_HEADER_PATH]: METHOD,
      "content-type": "application/grpc",
      te: "trailers",
      ...(authorization === undefined ? {} : { authorization }),
    });
    let headers: Record<string, unknown> = {};
    // The status comes in the trailers (or in the headers of a trailers-only answer); our side is
    // still open, as an attacker's would be, so the stream itself does not close on its own.
    const answered = (): void => {
      if (headers["grpc-status"] === undefined) return;
      resolve({ grpcStatus: headers["grpc-status"] as string, message: decodeURIComponent(String(headers["grpc-message"] ?? "")), ms: Date.now() - started });
      stream.close();
    };
    stream.on("response", (h) => {
      headers = { ...h };
      answered();
    });
    stream.on("trailers", (t) => {
      headers = { ...headers, ...t };
      answered();
    });
    stream.on("data", () => {});
    stream.on("error", reject);
    stream.on("close", () => resolve({ grpcStatus: undefined, message: undefined, ms: Date.now() - started }));
    stream.write(body);
  });
}

describe("the gRPC port before any key is checked", () => {
  it("answers a call with no key, or a wrong one, from its metadata: the message it is still sending is never awaited", async () => {
    const session = connect(`http://${gw.grpcAddress}`).on("error", () => {});
    try {
      const none = await callAndStall(session, partialMessage(60_000, 1_000));
      expect(none.grpcStatus).toBe("16"); // UNAUTHENTICATED
      expect(none.message).toContain("An API key is required");
      expect(none.ms).toBeLessThan(400); // well before the request timeout (500 ms here)
      const wrong = await callAndStall(session, partialMessage(60_000, 1_000), "Bearer agentrt_nope");
      expect([wrong.grpcStatus, wrong.message]).toEqual(["16", "The API key is not valid."]);
    } finally {
      session.close();
    }
  });

  it("refuses a message longer than the request limit from its length prefix, and ends a request that stops arriving", async () => {
    const session = connect(`http://${gw.grpcAddress}`).on("error", () => {});
    try {
      const large = await callAndStall(session, partialMessage(1_000_000, 10), `Bearer ${key.apiKey}`);
      expect(large.grpcStatus).toBe("8"); // RESOURCE_EXHAUSTED
      expect(large.ms).toBeLessThan(400);
      const stalled = await callAndStall(session, partialMessage(60_000, 1_000), `Bearer ${key.apiKey}`);
      expect(stalled.grpcStatus).toBe("4"); // DEADLINE_EXCEEDED
      expect(stalled.message).toBe("The request message did not arrive within 500 ms of the call's start.");
    } finally {
      session.close();
    }
  });

  it("closes a connection that opens no call", async () => {
    const session = connect(`http://${gw.grpcAddress}`);
    const closed = new Promise<number>((resolve) => {
      const started = Date.now();
      session.on("goaway", () => resolve(Date.now() - started));
      session.on("close", () => resolve(Date.now() - started));
    });
    session.on("error", () => {});
    expect(await closed).toBeLessThan(5_000);
    session.destroy();
  });

  it("takes one token of the key's rate limit per call, though the key is checked before the handler runs", async () => {
    const client = new AgentRuntimeClient(gw.grpcAddress, credentials.createInsecure());
    const md = new Metadata();
    md.set("authorization", `Bearer ${twoCalls.apiKey}`);
    const read = () =>
      new Promise<number>((resolve) => client.readEvents({ streamPath: "/agents/grpc-hard/none", fromOffset: 1, limit: 1 }, md, (e: ServiceError | null) => resolve(e?.code ?? 0)));
    try {
      // Two calls pass the limit (whatever they answer), the third is refused by it.
      const codes = [await read(), await read(), await read()];
      expect(codes.slice(0, 2)).not.toContain(8);
      expect(codes[2]).toBe(8); // RESOURCE_EXHAUSTED: rate_limited
    } finally {
      client.close();
    }
  });

  it("refuses a string field whose bytes are not UTF-8, saying so, and stores nothing (not U+FFFD)", async () => {
    const path = "/agents/grpc-hard/bytes";
    const client = new AgentRuntimeClient(gw.grpcAddress, credentials.createInsecure());
    const md = new Metadata();
    md.set("authorization", `Bearer ${key.apiKey}`);
    const encoded = Buffer.from(AppendEventsRequest.encode({ streamPath: path, events: [{ type: "agent/created", payloadJson: '{"note":"caf@@"}' }] }).finish());
    // "@@" becomes 0xC3 0x28: a lead byte without its continuation, the same length
    const bytes = Buffer.from(encoded);
    bytes.set([0xc3, 0x28], encoded.indexOf("@@"));
    try {
      const error = await new Promise<ServiceError | null>((resolve) =>
        client.makeUnaryRequest(METHOD, (b: Buffer) => b, (b: Buffer) => b, bytes, md, (e: ServiceError | null) => resolve(e)),
      );
      expect(error?.code).toBe(3); // INVALID_ARGUMENT
      expect(error?.details).toContain("a string field's bytes are not UTF-8");
      expect(await ts.store.lastOffset(path)).toBe(0);
      // The same request in UTF-8 is taken
      const fine = await new Promise<ServiceError | null>((resolve) =>
        client.makeUnaryRequest(METHOD, (b: Buffer) => b, (b: Buffer) => b, encoded, md, (e: ServiceError | null) => resolve(e)),
      );
      expect(fine).toBeNull();
      expect(await ts.store.lastOffset(path)).toBe(1);
    } finally {
      client.close();
    }
  });

  it("refuses a call that carries two different keys (authorization and x-api-key), naming both", async () => {
    const client = new AgentRuntimeClient(gw.grpcAddress, credentials.createInsecure());
    const md = new Metadata();
    md.set("authorization", `Bearer ${key.apiKey}`);
    md.set("x-api-key", twoCalls.apiKey);
    try {
      const error = await new Promise<ServiceError | null>((resolve) => client.readEvents({ streamPath: "/agents/grpc-hard/none", fromOffset: 1, limit: 1 }, md, (e: ServiceError | null) => resolve(e)));
      expect(error?.code).toBe(3); // INVALID_ARGUMENT
      expect(error?.details).toContain("Two different API keys were sent, in the Authorization header and in the X-API-Key header");
    } finally {
      client.close();
    }
  });
});
