// The model calls' keep-alive node:http fetch (http-fetch.ts) under the real `openai` client,
// against real HTTP servers: the fake model for the streaming protocol, and bare servers that
// misbehave on purpose (a 500, a cut connection, an idle socket closed, a redirect, TLS).

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { type AddressInfo, createServer as createNetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI, { APIConnectionError, APIError } from "openai";
import { startFakeModel, type FakeModel } from "@agentrt/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createHttpFetch, type HttpFetch, MAX_MODEL_LINE_BYTES } from "../src/http-fetch.ts";
import { MAX_MODEL_EVENT_BYTES } from "../src/sse-framing.ts";

const SSE_REPLY = [
  `data: {"id":"c1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`,
  `data: {"id":"c1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
  "data: [DONE]",
  "",
].join("\n\n");

/** A bare server; each test gives it a handler. Counts the connections it accepted. */
async function bareServer(handler: (req: IncomingMessage, res: ServerResponse) => void, tls?: { key: Buffer; cert: Buffer }): Promise<{ url: string; connections: () => number; sockets: Set<Socket>; close: () => Promise<void> }> {
  const server: Server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
  const sockets = new Set<Socket>();
  let connections = 0;
  server.on(tls ? "secureConnection" : "connection", (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? "https" : "http"}://${tls ? "localhost" : "127.0.0.1"}:${port}/v1`,
    connections: () => connections,
    sockets,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const readBody = async (req: IncomingMessage): Promise<string> => {
  let body = "";
  for await (const chunk of req) body += String(chunk);
  return body;
};

const chat = (client: OpenAI, content: string, signal?: AbortSignal) =>
  client.chat.completions.create({ model: "m", messages: [{ role: "user", content }], stream: true, stream_options: { include_usage: true } }, signal ? { signal } : {});

async function textOf(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>): Promise<string> {
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  return text;
}

/** Writes `piece` again and again, as fast as the client reads, until the connection closes. */
function writeForever(res: ServerResponse, piece: string): void {
  const pump = (): void => {
    while (!res.destroyed && res.write(piece));
    if (!res.destroyed) res.once("drain", pump);
  };
  pump();
}

/** The message a streamed call fails with. */
async function failureOf(client: OpenAI): Promise<string> {
  const error = await (async () => {
    for await (const _chunk of await chat(client, "hi"));
  })().catch((e: unknown) => e);
  return String((error as Error).message);
}

let http: HttpFetch;
afterEach(() => http?.close());

describe("a model call over the keep-alive node:http fetch", () => {
  let model: FakeModel;
  beforeAll(async () => {
    model = await startFakeModel({ defaultReply: { text: "ok then, here it is.", usage: { inputTokens: 100, outputTokens: 5 } } });
  });
  afterAll(async () => model.close());

  it("streams the reply and usage exactly as the global fetch does, with the same request body", async () => {
    // Given the same client, once on each fetch
    http = createHttpFetch();
    const ours = new OpenAI({ baseURL: model.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    const theirs = new OpenAI({ baseURL: model.url, apiKey: "k", maxRetries: 0 });
    // When each asks the model for a streamed turn
    const results = [];
    for (const client of [ours, theirs]) {
      const seen = model.requests.length;
      const chunks = [];
      // (the fake numbers its replies and stamps them: those two fields differ by design)
      for await (const { id: _id, created: _created, ...chunk } of await chat(client, "héllo, wörld")) chunks.push(chunk);
      const request = (await model.waitForRequests(seen + 1, 5_000)).at(-1)!;
      results.push({ chunks, body: request.rawBody, auth: request.headers.authorization, type: request.headers["content-type"] });
    }
    // Then the model got the same bytes and the caller the same chunks, usage included
    expect(results[0]!.body).toBe(results[1]!.body);
    expect(results[0]!.auth).toBe("Bearer k");
    expect(results[0]!.type).toBe(results[1]!.type);
    expect(results[0]!.chunks).toEqual(results[1]!.chunks);
    expect(results[0]!.chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe("ok then, here it is.");
    expect(results[0]!.chunks.length).toBeGreaterThan(2);
    expect(results[0]!.chunks.at(-1)?.usage?.prompt_tokens).toBe(100);
  });
});

describe("the keep-alive node:http fetch under a misbehaving endpoint", () => {
  it("keeps one connection for sequential calls", async () => {
    const server = await bareServer((req, res) => {
      void readBody(req).then(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(SSE_REPLY);
      });
    });
    http = createHttpFetch();
    const client = new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    for (let i = 0; i < 5; i++) expect(await textOf(await chat(client, `turn ${i}`))).toBe("Hello");
    expect(server.connections()).toBe(1);
    await server.close();
  });

  it("hands an HTTP error to the client as the status and the server's message", async () => {
    const server = await bareServer((req, res) => {
      void readBody(req).then(() => {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "the model is overloaded", type: "server_error" } }));
      });
    });
    http = createHttpFetch();
    const client = new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    const error = await chat(client, "hi").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(500);
    expect((error as APIError).message).toContain("the model is overloaded");
    await server.close();
  });

  it("fails the stream when the connection is cut mid-reply, instead of ending it quietly", async () => {
    const server = await bareServer((req, res) => {
      void readBody(req).then(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(SSE_REPLY.split("\n\n")[0] + "\n\n");
        setTimeout(() => res.socket?.destroy(), 50);
      });
    });
    http = createHttpFetch();
    const client = new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const chunk of await chat(client, "hi")) seen.push(chunk.choices[0]?.delta?.content ?? "");
    })().catch((e: unknown) => e);
    expect(seen).toEqual(["Hel"]);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe("the model endpoint closed the connection before the response ended");
    await server.close();
  });

  it("cuts off a response with a line past MAX_MODEL_LINE_BYTES, naming it, and closes the connection", async () => {
    let serverSawClose!: () => void;
    const closed = new Promise<void>((resolve) => (serverSawClose = resolve));
    const server = await bareServer((req, res) => {
      void readBody(req).then(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.on("close", () => serverSawClose());
        // One line that never ends, 1 MiB at a time, for as long as the client reads.
        const piece = "x".repeat(1024 * 1024);
        res.write("data: ");
        writeForever(res, piece);
      });
    });
    http = createHttpFetch();
    const client = new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    expect(await failureOf(client)).toContain(`the model endpoint sent a line of more than ${MAX_MODEL_LINE_BYTES} bytes; the call was cut off`);
    await closed;
    await server.close();
  });

  it("given floods of bare CRs, blank lines and comments before the reply, when read, then they cost less than as many bytes of real chunks, not the square of their size", async () => {
    const frame = (content: string) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
    const SIZE = 2 * 1024 * 1024;
    // What each call streams first: 2 MiB of nothing the client reads, or 2 MiB of reply chunks
    const junk = ["\r".repeat(64 * 1024), ":\n\n".repeat(16 * 1024), "\n".repeat(64 * 1024), `: ${"c".repeat(1_000)}\n`.repeat(60)];
    const chunks = frame("x".repeat(40)).repeat(Math.ceil((64 * 1024) / frame("x".repeat(40)).length));
    let filler: "junk" | "chunks" = "junk";
    const server = await bareServer((req, res) => {
      void readBody(req).then(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        let sent = 0;
        let piece = 0;
        const pump = (): void => {
          while (!res.destroyed && sent < SIZE) {
            const next = filler === "junk" ? (junk[piece++ % junk.length] as string) : chunks;
            sent += next.length;
            if (!res.write(next)) return void res.once("drain", pump);
          }
          res.end(`${frame("done")}data: [DONE]\n\n`);
        };
        pump();
      });
    });
    http = createHttpFetch();
    const client = new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    const cpuOf = async (kind: "junk" | "chunks"): Promise<{ ms: number; text: string }> => {
      filler = kind;
      const before = process.cpuUsage();
      const text = await textOf(await chat(client, "hi"));
      const used = process.cpuUsage(before);
      return { ms: (used.user + used.system) / 1_000, text };
    };
    await cpuOf("chunks"); // warm
    const real = await cpuOf("chunks");
    const flood = await cpuOf("junk");
    // The reply after the flood is whole; the flood cost less CPU than real chunks of its size
    // (unframed, the client's decoder copied each network chunk's rest per blank line: minutes)
    expect(flood.text).toBe("done");
    expect(real.text.length).toBeGreaterThan(400_000);
    expect(flood.ms, `flood ${flood.ms} ms, real chunks ${real.ms} ms`).toBeLessThan(real.ms);
    await server.close();
  }, 60_000);

  it("given an event of short lines that never ends, when read, then it is cut off at its bound, naming it", async () => {
    const server = await bareServer((req, res) => {
      void readBody(req).then(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const piece = "data: x\n".repeat(8 * 1024);
        writeForever(res, piece);
      });
    });
    http = createHttpFetch();
    const client = new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    expect(await failureOf(client)).toContain(`the model endpoint sent an event of more than ${MAX_MODEL_EVENT_BYTES} bytes; the call was cut off`);
    await server.close();
  });

  it("given a valid stream of more than MAX_MODEL_LINE_BYTES whose lines end in CR alone, when read, then it is lines, not one line past the bound", async () => {
    const server = await bareServer((req, res) => {
      void readBody(req).then(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const frame = (content: string) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\r\r`;
        // 5 MiB of chunks, CR-only line ends (SSE allows LF, CR or CRLF), in 64 KiB writes
        const piece = frame("x".repeat(60)).repeat(512);
        let sent = 0;
        const pump = (): void => {
          while (!res.destroyed && sent < 5 * 1024 * 1024) {
            sent += piece.length;
            if (!res.write(piece)) return void res.once("drain", pump);
          }
          res.end("data: [DONE]\r\r");
        };
        pump();
      });
    });
    http = createHttpFetch();
    const client = new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    const text = await textOf(await chat(client, "hi"));
    // (5 MiB of SSE, past the line bound, carries 1.5 M characters of text)
    expect(text.length).toBeGreaterThan(1_500_000);
    expect(text).toMatch(/^x+$/);
    await server.close();
  });

  it("stops reading and closes the request when the caller aborts mid-reply", async () => {
    let closedByClient!: () => void;
    const clientClosed = new Promise<void>((resolve) => (closedByClient = resolve));
    const server = await bareServer((req, res) => {
      void readBody(req).then(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(SSE_REPLY.split("\n\n")[0] + "\n\n");
        res.on("close", () => closedByClient());
      });
    });
    http = createHttpFetch();
    const client = new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    const controller = new AbortController();
    const seen: string[] = [];
    const done = (async () => {
      for await (const chunk of await chat(client, "hi", controller.signal)) {
        seen.push(chunk.choices[0]?.delta?.content ?? "");
        controller.abort();
      }
    })().catch((e: unknown) => e);
    await clientClosed;
    await done;
    expect(seen).toEqual(["Hel"]);
    await server.close();
  });

  it("fails the call, not the process, on an answer a Response cannot hold", async () => {
    // Given an endpoint that answers with raw bytes: a status outside 200-599, then a status line
    // with a control character in it
    const answers = ["HTTP/1.1 700 Weird\r\ncontent-length: 0\r\n\r\n", "HTTP/1.1 200 O\u0001K\r\ncontent-length: 0\r\n\r\n"];
    const raw = createNetServer((socket) => {
      const answer = answers.shift() ?? "HTTP/1.1 500 Nothing left\r\ncontent-length: 0\r\n\r\n";
      socket.once("data", () => socket.end(answer));
    });
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1`;
    http = createHttpFetch();
    const client = new OpenAI({ baseURL: url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    // When the client calls it twice
    const first = await chat(client, "hi").catch((e: unknown) => e);
    const second = await chat(client, "hi").catch((e: unknown) => e);
    // Then each call failed with a connection error naming why, and this process is still here
    expect(first).toBeInstanceOf(APIConnectionError);
    expect(String((first as APIConnectionError).cause)).toMatch(/HTTP status 700/);
    expect(second).toBeInstanceOf(APIConnectionError);
    expect(String((second as APIConnectionError).cause)).toMatch(/statusText/);
    await new Promise<void>((resolve) => raw.close(() => resolve()));
  });

  it("refuses at once with a connection error when nothing listens", async () => {
    const server = await bareServer(() => undefined);
    const url = server.url;
    await server.close();
    http = createHttpFetch();
    const client = new OpenAI({ baseURL: url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    const error = await chat(client, "hi").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(String((error as APIConnectionError).cause)).toMatch(/ECONNREFUSED/);
  });

  it("sends a call again on a fresh socket when the server closes the idle one it reused", async () => {
    // Given a server that closes a kept-alive connection as its next request arrives (the race of
    // an idle timeout on the server's side: nothing of that request is answered)
    const served: string[] = [];
    const requestsOn = new WeakMap<Socket, number>();
    const server = await bareServer((req, res) => {
      const n = (requestsOn.get(req.socket) ?? 0) + 1;
      requestsOn.set(req.socket, n);
      if (n > 1) {
        req.socket.destroy();
        return;
      }
      void readBody(req).then((body) => {
        served.push(body);
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(SSE_REPLY);
      });
    });
    http = createHttpFetch();
    const client = new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    expect(await textOf(await chat(client, "first"))).toBe("Hello");
    // When the next call goes out on that kept-alive socket
    // Then it is answered on a new connection, and served once
    expect(await textOf(await chat(client, "second"))).toBe("Hello");
    expect(served.filter((b) => b.includes("second"))).toHaveLength(1);
    expect(server.connections()).toBe(2);
    await server.close();
  });

  it("refuses a redirect, naming where it pointed, and leaves an unusual body to the global fetch", async () => {
    const server = await bareServer((req, res) => {
      if (req.url === "/v1/chat/completions") {
        res.writeHead(307, { location: "/v2/chat/completions" });
        res.end();
        return;
      }
      void readBody(req).then(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(SSE_REPLY);
      });
    });
    const handedOver: string[] = [];
    http = createHttpFetch({ fallback: (input, init) => (handedOver.push(String(input)), fetch(input, init)) });
    const client = new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
    // Followed, the conversation went again to wherever the redirect pointed (another origin too).
    const error = await chat(client, "hi").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(((error as APIConnectionError).cause as Error).message).toBe(
      'the model endpoint answered HTTP 307, a redirect to "/v2/chat/completions"; redirects are not followed: configure the endpoint\'s own URL',
    );
    expect(handedOver).toEqual([]);
    const streamed = new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode("{}")), c.close()) });
    const response = await http.fetch(`${server.url.replace("/v1", "/v2")}/chat/completions`, { method: "POST", body: streamed, duplex: "half" } as RequestInit);
    expect(response.status).toBe(200);
    expect(handedOver).toHaveLength(1);
    await server.close();
  });

  it("calls an https endpoint, trusting only the authority it is given", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentrt-tls-"));
    try {
      execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"], { stdio: "ignore" });
      const tls = { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) };
      const server = await bareServer((req, res) => {
        void readBody(req).then(() => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.end(SSE_REPLY);
        });
      }, tls);
      http = createHttpFetch({ ca: tls.cert });
      const client = new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: http.fetch });
      expect(await textOf(await chat(client, "over tls"))).toBe("Hello");
      // An endpoint whose certificate nobody vouches for is refused
      const untrusting = createHttpFetch();
      const refused = await chat(new OpenAI({ baseURL: server.url, apiKey: "k", maxRetries: 0, fetch: untrusting.fetch }), "hi").catch((e: unknown) => e);
      untrusting.close();
      expect(refused).toBeInstanceOf(APIConnectionError);
      expect(String((refused as APIConnectionError).cause)).toMatch(/self.signed|certificate/i);
      await server.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
