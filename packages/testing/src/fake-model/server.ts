// A real HTTP server that speaks the OpenAI streaming protocols (Chat Completions and
// Responses), so services are tested with the real `openai` client over a real socket.
// Replies are scripted per request (a queue, or a function of the request body); every
// request body is logged with its high-resolution receive time.

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { chatCompletionJson, streamChat, type StreamContext } from "./chat-stream.ts";
import { delay, monotonicMs, splitTokens } from "./pacing.ts";
import { streamResponses } from "./responses-stream.ts";
import type { FakeModel, FakeModelOptions, FakeModelRequest, FakeReply, FakeReplySource } from "./types.ts";

export async function startFakeModel(options: FakeModelOptions = {}): Promise<FakeModel> {
  const queue: FakeReplySource[] = [...(options.replies ?? [])];
  const requests: FakeModelRequest[] = [];
  const waiters = new Set<() => void>();
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, `fake model crashed: ${String(error)}`, "server_error");
      else res.destroy();
    });
  });
  server.on("connection", (socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req);
    const receivedAtMonotonicMs = monotonicMs();
    const receivedAtMs = Date.now();
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const api = path.endsWith("/chat/completions") ? "chat" : path.endsWith("/responses") ? "responses" : "other";
    const request: FakeModelRequest = {
      index: requests.length,
      method: req.method ?? "GET",
      path,
      api,
      headers: req.headers,
      body: parseJson(rawBody),
      rawBody,
      receivedAtMs,
      receivedAtMonotonicMs,
      progress: { tokensSent: 0, clientAborted: false, completed: false },
    };
    requests.push(request);
    res.on("close", () => {
      if (!request.progress.completed) request.progress.clientAborted = true;
    });
    for (const wake of [...waiters]) wake();

    if (api === "other" || req.method !== "POST") {
      if (path.endsWith("/models")) return sendJson(res, 200, { object: "list", data: [{ id: options.modelName ?? "fake-model", object: "model", created: 0, owned_by: "fake" }] });
      return sendError(res, 404, `fake model: no route for ${req.method} ${path}`, "invalid_request_error");
    }
    if (typeof request.body !== "object" || request.body === null) {
      return sendError(res, 400, "fake model: request body is not a JSON object", "invalid_request_error");
    }
    const source = queue.shift() ?? options.defaultReply;
    if (source === undefined) return sendError(res, 500, "fake model: no scripted reply left", "server_error");
    const reply: FakeReply = typeof source === "function" ? await source(request) : source;
    if (reply.firstTokenDelayMs !== undefined && reply.firstTokenDelayMs > 0) await delay(reply.firstTokenDelayMs);
    if (reply.failure !== undefined) {
      const f = reply.failure;
      return sendError(res, f.status, f.message ?? `fake model failure ${f.status}`, f.type ?? "server_error", f.code ?? null);
    }
    const body = request.body as Record<string, unknown>;
    const ctx: StreamContext = {
      id: `fake-${request.index}`,
      model: typeof body.model === "string" ? body.model : (options.modelName ?? "fake-model"),
      body,
      rawBody,
      reply,
      tokens: reply.tokens ?? splitTokens(reply.text ?? ""),
      progress: request.progress,
      response: res,
    };
    if (body.stream !== true) {
      if (api === "responses") return sendError(res, 400, "fake model: only streaming Responses are supported", "invalid_request_error");
      request.progress.completed = true;
      return sendJson(res, 200, chatCompletionJson(ctx));
    }
    await (api === "chat" ? streamChat(ctx) : streamResponses(ctx));
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}/v1`,
    port: address.port,
    requests,
    script(reply) {
      queue.push(reply);
    },
    waitForRequests(count, timeoutMs = 10_000) {
      if (requests.length >= count) return Promise.resolve(requests.slice(0, count));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`fake model: expected ${count} requests within ${timeoutMs} ms, got ${requests.length}`));
        }, timeoutMs);
        const check = (): void => {
          if (requests.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(requests.slice(0, count));
        };
        waiters.add(check);
      });
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string, type: string, code: string | null = null): void {
  sendJson(res, status, { error: { message, type, param: null, code } });
}
