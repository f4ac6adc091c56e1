// The chat adapter (openai-client.ts) against an endpoint whose chunks do not have the shape the
// protocol's types promise, with the real `openai` client over HTTP: a chunk without `choices`
// is read as one with none (a usage chunk), and content that is not text fails the call naming
// it. They read as "Cannot read properties of undefined (reading '0')" and "[object Object]".

import { createServer, type Server } from "node:http";
import { gzipSync } from "node:zlib";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { ModelStreamEvent } from "../src/model-client.ts";
import { OpenAiModelClient } from "../src/openai-client.ts";

let server: Server | undefined;
let client: OpenAiModelClient | undefined;
afterEach(async () => {
  client?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
});

async function endpoint(chunks: readonly unknown[], answer?: { headers: Record<string, string>; body: string | Buffer }): Promise<string> {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (answer !== undefined) {
        res.writeHead(200, answer.headers);
        res.end(answer.body);
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/v1`;
}

async function collect(baseUrl: string): Promise<{ text: string; error?: string; finishReasons?: string[] }> {
  client = new OpenAiModelClient();
  let text = "";
  const finishReasons: string[] = [];
  try {
    for await (const event of client.stream({
      route: { provider: "p", baseUrl, apiKey: "k", remoteModel: "m", api: "chat", promptCacheKey: false },
      model: "p/m",
      messages: [{ role: "user", content: "hi" }],
      promptCacheKey: "/agents/a",
      interpretResponses: false,
      purpose: "turn",
      signal: new AbortController().signal,
    }) as AsyncIterable<ModelStreamEvent>) {
      if (event.kind === "chunk") text += event.text;
      if (event.kind === "chunk" && event.finishReason !== undefined) finishReasons.push(event.finishReason);
    }
    return finishReasons.length === 0 || finishReasons[0] === "stop" ? { text } : { text, finishReasons };
  } catch (error) {
    return { text, error: (error as Error).message };
  }
}

const chunk = (delta: unknown, finish: string | null = null) => ({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });

describe("chunks of an unexpected shape", () => {
  it("given a chunk without choices, when streamed, then it is a chunk with none and the reply goes on", async () => {
    const url = await endpoint([chunk({ content: "Hel" }), { id: "c", object: "chat.completion.chunk", created: 0, model: "m", usage: { prompt_tokens: 1, completion_tokens: 1 } }, chunk({ content: "lo" }, "stop")]);
    expect(await collect(url)).toEqual({ text: "Hello" });
  });

  it("given content that is not text, when streamed, then the call fails naming it", async () => {
    const url = await endpoint([chunk({ content: "a" }), chunk({ content: { x: 1 } }), chunk({ content: "b" }, "stop")]);
    expect(await collect(url)).toEqual({ text: "a", error: "the model sent an object as delta.content, where the chat completions protocol has text" });
  });

  it("given an event whose data is not JSON, or a chunk nesting past the bound, when streamed, then the call fails saying the model sent it", async () => {
    const sse = (body: string) => ({ headers: { "content-type": "text/event-stream" }, body });
    const notJson = await collect(await endpoint([], sse(`data: ${JSON.stringify(chunk({ content: "a" }))}\n\ndata: {not json\n\n`)));
    expect(notJson.text).toBe("a");
    expect(notJson.error).toMatch(/^the model sent a stream event whose data is not JSON \(.+\)$/);
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    const deep = await collect(await endpoint([], sse(`data: {"x":${"[".repeat(5_000)}${"]".repeat(5_000)}}\n\n`)));
    expect(deep.error).toBe("the model endpoint sent a chunk whose JSON nests deeper than 64 levels; the call was cut off");
  });

  it("given a reply cut at the output limit, when streamed, then its finish reason comes with the last chunk, once", async () => {
    const url = await endpoint([chunk({ content: "Hel" }), chunk({ content: "lo" }, "length"), chunk({}, "stop")]);
    expect(await collect(url)).toEqual({ text: "Hello", finishReasons: ["length"] });
  });

  it("given a finish reason that is not a short identifier, when streamed, then it reads unrecognised, not the provider's text", async () => {
    const url = await endpoint([chunk({ content: "a" }, "x".repeat(10_000))]);
    expect(await collect(url)).toEqual({ text: "a", finishReasons: ["unrecognised"] });
  });

  it("given an HTML page or one JSON completion where the stream should be, when it ends, then the error names what came", async () => {
    const html = await endpoint([], { headers: { "content-type": "text/html; charset=utf-8" }, body: "<html><body>Bad gateway</body></html>" });
    expect((await collect(html)).error).toBe(
      'the model\'s stream ended without a finish_reason (the endpoint answered as "text/html; charset=utf-8", not as an event stream: is it an OpenAI-compatible endpoint that streams?)',
    );
    server?.close();
    const json = await endpoint([], { headers: { "content-type": "application/json" }, body: JSON.stringify({ choices: [{ message: { content: "hi" } }] }) });
    expect((await collect(json)).error).toMatch(/ended without a finish_reason \(the endpoint answered as "application\/json", not as an event stream/);
  });

  it("given a gzip body nobody asked for, when it ends, then the error says it was compressed", async () => {
    const url = await endpoint([], { headers: { "content-type": "text/event-stream", "content-encoding": "gzip" }, body: gzipSync("data: {}\n\n") });
    expect((await collect(url)).error).toBe('the model\'s stream ended without a finish_reason (the endpoint sent its body compressed as "gzip", which was not asked for and is not inflated)');
  });

  it("given an event stream that stops before its finish, then the error is the plain one", async () => {
    const url = await endpoint([chunk({ content: "a" })]);
    expect((await collect(url)).error).toBe("the model's stream ended without a finish_reason");
  });
});
