// Issue 11, "keys and connections" and the named crashes: against the gateway as a process with
// auth on. The per-key live-subscription cap (SSE + WebSocket + gRPC together, 429 past it,
// freed on close), slowloris sockets closed by the header and body timeouts while a live stream
// outlives them, the JSON depth limit, `?apiKey=` only on live routes, and the inputs that used
// to end the process (bad percent-encodings at the static UI, resets while an upgrade is refused).

import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { followLive, userMessage, waitFor } from "@agentrt/testing";
import { grpcExchange, grpcFrame, grpcOpenStream, grpcSession, pbString, pbVarintField } from "./support/grpc-raw.ts";
import { enc, httpJson, waitForText } from "./support/live-session.ts";
import { rawExchange, wsFrame } from "./support/raw-clients.ts";
import { mintKeys, startSecureSystem, tempKeysFile, type MintedKey, type SecureSystem } from "./support/secure-system.ts";

const AGENT = "/agents/lim/alpha";
const CAP = 3;
const HEADERS_TIMEOUT_MS = 1_500;
const REQUEST_TIMEOUT_MS = 2_500;

let sys: SecureSystem;
let reader: MintedKey;
let writer: MintedKey;
let pid: number;

beforeAll(async () => {
  const keysFile = tempKeysFile();
  const minted = await mintKeys(keysFile, [
    { prefix: "/agents/lim", verbs: "read" },
    { prefix: "/agents/lim", verbs: "read,append" },
  ]);
  [reader, writer] = [minted[0]!, minted[1]!];
  sys = await startSecureSystem(keysFile, {
    gatewayOnly: true,
    gatewayEnv: {
      MAX_LIVE_SUBSCRIPTIONS_PER_KEY: String(CAP),
      HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      KEEP_ALIVE_TIMEOUT_MS: "1500",
    },
  });
  pid = sys.gateway.pid!;
  const created = await httpJson(sys.gatewayUrl, "POST", "/v1/agents", { headers: { authorization: `Bearer ${writer.apiKey}` }, body: { streamPath: AGENT } });
  expect(created.status, created.text).toBe(201);
});
afterAll(async () => sys?.stop());

const sseUrl = (key: MintedKey) => `${sys.gatewayUrl}/v1/streams/${enc(AGENT)}/subscribe?apiKey=${enc(key.apiKey)}&fromOffset=1`;
const wsUrl = (key: MintedKey) => `${sys.gatewayUrl.replace("http", "ws")}/v1/streams/${enc(AGENT)}/ws?apiKey=${enc(key.apiKey)}&fromOffset=1`;
const grpcHeaders = (key: MintedKey) => ({ "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${key.apiKey}` });
const subscribeMessage = grpcFrame(Buffer.concat([pbString(1, AGENT), pbVarintField(2, 1)]));
const RESOURCE_EXHAUSTED = 8;


describe("per-key cap on live subscriptions", () => {
  it(`the ${CAP + 1}th live subscription of one key is 429 on SSE, WebSocket and gRPC; closing one frees a slot`, async () => {
    const session = grpcSession(sys.grpcPort);
    const sse = followLive("sse", sseUrl(reader));
    const ws = followLive("ws", wsUrl(reader));
    const grpc = grpcOpenStream(session, "/agentrt.v1.AgentRuntime/Subscribe", grpcHeaders(reader), subscribeMessage);
    try {
      expect(await sse.opened).toBe(200);
      expect(await ws.opened).toBe(101);
      expect(await grpc.first).toBe("data");

      const refused = await httpJson(sys.gatewayUrl, "GET", `/v1/streams/${enc(AGENT)}/subscribe?apiKey=${enc(reader.apiKey)}`);
      expect(refused.status).toBe(429);
      expect(refused.body.error?.message).toMatch(new RegExp(`limit is ${CAP}.*MAX_LIVE_SUBSCRIPTIONS_PER_KEY`));
      const wsRefused = followLive("ws", wsUrl(reader));
      expect(await wsRefused.opened).toBe(429);
      const grpcRefused = await grpcExchange(session, "/agentrt.v1.AgentRuntime/Subscribe", grpcHeaders(reader), subscribeMessage);
      expect(grpcRefused.status).toBe(RESOURCE_EXHAUSTED);

      // The cap is per key: another key still follows the same stream.
      const otherKey = followLive("sse", sseUrl(writer));
      expect(await otherKey.opened).toBe(200);
      otherKey.close();

      // Closing one (the WebSocket) gives its slot back once the gateway sees the close.
      ws.close();
      await waitFor(
        async () => {
          const again = followLive("sse", sseUrl(reader));
          const status = await again.opened;
          again.close();
          return status === 200;
        },
        { timeoutMs: 5_000, intervalMs: 100, what: "a freed live-subscription slot" },
      );
    } finally {
      sse.close();
      ws.close();
      grpc.close();
      session.close();
    }
  });
});

describe("header and body timeouts", () => {
  /** Opens a socket, writes `first`, then trickles one byte every 300 ms; resolves when the server closes it. */
  function slowloris(first: string): Promise<{ closedAfterMs: number; response: string }> {
    return new Promise((resolve) => {
      const started = Date.now();
      const socket = connect({ host: "127.0.0.1", port: Number(new URL(sys.gatewayUrl).port) });
      let response = "";
      const drip = setInterval(() => socket.writable && socket.write("x"), 300);
      socket.on("connect", () => socket.write(first));
      socket.on("data", (d: Buffer) => (response += d.toString()));
      socket.on("error", () => {});
      socket.on("close", () => {
        clearInterval(drip);
        resolve({ closedAfterMs: Date.now() - started, response });
      });
    });
  }

  it("a socket that never sends a byte is closed within the header timeout", async () => {
    const started = Date.now();
    const socket = connect({ host: "127.0.0.1", port: Number(new URL(sys.gatewayUrl).port) });
    socket.on("error", () => {});
    await new Promise((resolve) => socket.on("close", resolve));
    const closedAfterMs = Date.now() - started;
    expect(closedAfterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    expect(closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 3_000);
  });

  it("a client trickling its headers is cut off within the header timeout", async () => {
    const { closedAfterMs, response } = await slowloris("GET /v1/agents HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    expect(closedAfterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    // Node checks expiry once per checking interval (<= 1 s): the bound is the timeout plus that, plus slack for load.
    expect(closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 3_000);
    expect(response).toMatch(/^HTTP\/1\.1 408/);
  });

  it("a client trickling its body is cut off within the request timeout", async () => {
    const { closedAfterMs, response } = await slowloris(
      `POST /v1/streams/${enc(AGENT)}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${writer.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
    );
    expect(closedAfterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
    expect(closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS + 3_000);
    expect(response).toMatch(/^HTTP\/1\.1 408/);
  });

  it("a live stream outlives the request timeout and still gets new events", async () => {
    const sse = followLive("sse", sseUrl(writer));
    try {
      expect(await sse.opened).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, REQUEST_TIMEOUT_MS + 1_500));
      const sent = await httpJson(sys.gatewayUrl, "POST", `/v1/streams/${enc(AGENT)}/events`, {
        headers: { authorization: `Bearer ${writer.apiKey}` },
        body: { events: [userMessage("still listening?")] },
      });
      expect(sent.status, sent.text).toBe(200);
      await waitForText(sse.text, "still listening?", 5_000);
    } finally {
      sse.close();
    }
  });
});

describe("JSON depth", () => {
  it.each([100, 5_000])("a body nested %i levels deep is a 400 naming the limit (not a 500)", async (levels) => {
    const body = `{"events":[{"type":"agents/context-added","payload":${"[".repeat(levels)}${"]".repeat(levels)}}]}`;
    const res = await httpJson(sys.gatewayUrl, "POST", `/v1/streams/${enc(AGENT)}/events`, { headers: { authorization: `Bearer ${writer.apiKey}` }, body });
    expect(res.status).toBe(400);
    expect(res.body.error?.code).toBe("invalid_request");
    expect(res.body.error?.message).toMatch(/limit of 64 levels/);
  });

  it("a gRPC payload_json nested too deep is INVALID_ARGUMENT naming the limit", async () => {
    const input = Buffer.concat([pbString(1, "agents/context-added"), pbString(2, `${"[".repeat(3000)}${"]".repeat(3000)}`)]);
    const request = Buffer.concat([pbString(1, AGENT), Buffer.from([0x12]), varintOf(input.length), input]);
    const session = grpcSession(sys.grpcPort);
    const res = await grpcExchange(session, "/agentrt.v1.AgentRuntime/AppendEvents", grpcHeaders(writer), grpcFrame(request));
    session.close();
    expect(res.status).toBe(3);
    expect(decodeURIComponent(res.message ?? "")).toMatch(/limit of 64 levels/);
  });
});

describe("?apiKey= only where a browser cannot send a header", () => {
  it.each([
    ["GET", "/v1/agents"],
    ["GET", `/v1/streams/${encodeURIComponent(AGENT)}/events`],
    ["GET", `/v1/agents/${encodeURIComponent(AGENT)}/state`],
    ["GET", "/v1/openapi.json"],
  ])("%s %s with ?apiKey= is 401 pointing at the Authorization header", async (method, path) => {
    const res = await httpJson(sys.gatewayUrl, method, `${path}?apiKey=${enc(reader.apiKey)}`);
    expect(res.status).toBe(401);
    expect(res.body.error?.message).toMatch(/Authorization: Bearer/);
  });

  it("SSE and WebSocket accept it", async () => {
    const sse = followLive("sse", sseUrl(reader));
    const ws = followLive("ws", wsUrl(reader));
    expect(await sse.opened).toBe(200);
    expect(await ws.opened).toBe(101);
    sse.close();
    ws.close();
  });
});

describe("inputs that used to end the gateway", () => {
  const port = () => Number(new URL(sys.gatewayUrl).port);

  it.each(["/%E0%A4%A", "/%", "/assets/%ZZ", "/a%00b", "/..%2f..%2fetc%2fpasswd", `/${"x".repeat(9_000)}`])("static path %s is a 4xx", async (path) => {
    const res = await rawExchange(port(), Buffer.from(`GET ${path.slice(0, 60)}${path.slice(60)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`), { kind: "read" });
    if (path.includes("..")) expect(res.status).toBe(200); // normalised inside the UI folder: index.html
    else expect(res.status).toBe(400);
    expect(sys.gateway.running).toBe(true);
  });

  it("API routes answer malformed targets with 4xx", async () => {
    for (const path of [`/v1/streams/%/events`, "/v1/agents/%E0%A4%A/state", "//", "/v1//agents"]) {
      const res = await rawExchange(port(), Buffer.from(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${reader.apiKey}\r\nConnection: close\r\n\r\n`), { kind: "read" });
      expect(res.status, path).not.toBeNull();
      expect(res.status! < 500, `${path} → ${res.status}`).toBe(true);
    }
  });

  it("200 resets while a WebSocket upgrade is being refused, and bad frames after one is accepted", async () => {
    const handshake = (query: string) =>
      Buffer.from(`GET /v1/streams/${enc(AGENT)}/ws${query} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    await Promise.all(
      Array.from({ length: 200 }, (_, i) => rawExchange(port(), handshake(i % 2 === 0 ? "" : "?apiKey=agrt_x_bad"), { kind: i % 3 === 0 ? "reset-after-write" : "reset-on-response" })),
    );
    for (const frame of [wsFrame(0x1, Buffer.from("not json")), wsFrame(0x3, Buffer.from("x")), wsFrame(0x1, Buffer.from("x"), { mask: false }), wsFrame(0x1, Buffer.from("x"), { declaredLength: 1n << 40n })]) {
      await rawExchange(port(), handshake(`?apiKey=${enc(reader.apiKey)}`), { kind: "frames-after-upgrade", frames: frame });
    }
    expect(sys.gateway.running).toBe(true);
    expect(sys.gateway.pid).toBe(pid);
    expect(await sys.gateway.healthz()).toBe(200);
    const read = await httpJson(sys.gatewayUrl, "GET", `/v1/streams/${enc(AGENT)}/events`, { headers: { authorization: `Bearer ${reader.apiKey}` } });
    expect(read.status).toBe(200);
  });
});

describe("resets mid-stream and mid-upload", () => {
  const port = () => Number(new URL(sys.gatewayUrl).port);

  it("50 SSE streams reset on their first byte and 50 uploads cut off mid-body leave the gateway serving, with every slot freed", async () => {
    const sse = Buffer.from(`GET /v1/streams/${enc(AGENT)}/subscribe?apiKey=${enc(reader.apiKey)}&fromOffset=1 HTTP/1.1\r\nHost: x\r\n\r\n`);
    const body = JSON.stringify({ events: [userMessage("x".repeat(20_000))] });
    const upload = Buffer.from(
      `POST /v1/streams/${enc(AGENT)}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${writer.apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    await Promise.all([
      ...Array.from({ length: 50 }, () => rawExchange(port(), sse, { kind: "reset-on-response" })),
      ...Array.from({ length: 50 }, (_, i) => rawExchange(port(), upload, { kind: "partial-then-reset", bytes: 200 + i * 300, waitMs: i % 10 })),
    ]);
    expect(sys.gateway.pid).toBe(pid);
    expect(sys.gateway.running).toBe(true);
    // All of the reader's slots came back: it can hold CAP live streams again.
    await waitFor(
      async () => {
        const streams = Array.from({ length: CAP }, () => followLive("sse", sseUrl(reader)));
        const statuses = await Promise.all(streams.map((s) => s.opened));
        streams.forEach((s) => s.close());
        if (statuses.some((st) => st !== 200)) await new Promise((resolve) => setTimeout(resolve, 200));
        return statuses.every((st) => st === 200);
      },
      { timeoutMs: 10_000, intervalMs: 100, what: `${CAP} live streams for the reader` },
    );
  });
});

function varintOf(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}
