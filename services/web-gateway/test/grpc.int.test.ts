// gRPC round trip with the generated ts-proto client: the same operations, scopes and error
// mapping as HTTP, and server streaming for subscribe.
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { credentials, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentRuntimeClient, type AppendEventsResponse, type Event, type GetStateResponse, type ListAgentsResponse, type ReadEventsResponse } from "@agentrt/gateway-proto";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";
import { userMessage } from "@agentrt/testing";

const writer = testKey([{ prefix: "/agents/grpc", verbs: ["read", "append"] }]);
const outsider = testKey([{ prefix: "/agents/other", verbs: ["admin"] }]);
const appendOnly = testKey([{ prefix: "/agents/grpc", verbs: ["append"] }]);
let ts: TestStore;
let gw: TestGateway;
let client: AgentRuntimeClient;

const md = (key?: string) => {
  const m = new Metadata();
  if (key) m.set("authorization", `Bearer ${key}`);
  return m;
};
type Cb<Res> = (e: ServiceError | null, r: Res) => void;
const call = <Res>(fn: (cb: Cb<Res>) => unknown) => new Promise<Res>((resolve, reject) => fn((e, r) => (e ? reject(e) : resolve(r))));
// One wrapper per RPC keeps the generated client's overloads typed.
const unary = {
  appendEvents: (req: Parameters<AgentRuntimeClient["appendEvents"]>[0], key?: string) => call<AppendEventsResponse>((cb) => client.appendEvents(req, md(key), cb)),
  readEvents: (req: Parameters<AgentRuntimeClient["readEvents"]>[0], key?: string) => call<ReadEventsResponse>((cb) => client.readEvents(req, md(key), cb)),
  getState: (req: Parameters<AgentRuntimeClient["getState"]>[0], key?: string) => call<GetStateResponse>((cb) => client.getState(req, md(key), cb)),
  listAgents: (req: Parameters<AgentRuntimeClient["listAgents"]>[0], key?: string) => call<ListAgentsResponse>((cb) => client.listAgents(req, md(key), cb)),
};

beforeAll(async () => {
  ts = await openTestStore();
  gw = await startTestGateway({ store: ts.store, keys: [writer, outsider, appendOnly], grpc: true });
  client = new AgentRuntimeClient(gw.grpcAddress, credentials.createInsecure());
});
afterAll(async () => {
  client?.close();
  await gw?.close();
  await ts?.close();
});

const userInput = (content: string) => ({
  type: "agents/context-added",
  payloadJson: JSON.stringify(userMessage(content).payload),
});

describe("gRPC", () => {
  it("appends, reads, lists, gets state and subscribes with the generated client", async () => {
    const path = "/agents/grpc/one";
    const appended = await unary.appendEvents({ streamPath: path, events: [{ type: "agent/created", payloadJson: "{}" }, userInput("hi")] }, writer.apiKey);
    expect(appended.status).toBe("committed");
    expect(appended.events.map((e) => e.offset)).toEqual([1, 2]);
    const read = await unary.readEvents({ streamPath: path, fromOffset: 2, limit: 10 }, writer.apiKey);
    expect(read.events.map((e) => JSON.parse(e.payloadJson).content)).toEqual(["hi"]);
    expect(read.nextOffset).toBe(3);
    const state = await unary.getState({ streamPath: path }, writer.apiKey);
    expect(JSON.parse(state.stateJson).birthCertificate).toEqual({ createdAtOffset: 1 });
    const list = await unary.listAgents({ prefix: "/agents/grpc" }, writer.apiKey);
    expect(list.agents.map((a) => a.streamPath)).toEqual([path]);

    const received: Event[] = [];
    const stream = client.subscribe({ streamPath: path, fromOffset: 2, ephemeral: false }, md(writer.apiKey));
    const done = new Promise<void>((resolve, reject) => {
      stream.on("data", (e: Event) => {
        received.push(e);
        if (received.length === 2) {
          stream.cancel();
          resolve();
        }
      });
      stream.on("error", (e: ServiceError) => (e.code === status.CANCELLED ? resolve() : reject(e)));
    });
    await unary.appendEvents({ streamPath: path, events: [userInput("live")] }, writer.apiKey);
    await done;
    expect(received.map((e) => e.offset)).toEqual([2, 3]);
  });

  it("maps errors to gRPC status codes and commits nothing", async () => {
    const path = "/agents/grpc/two";
    const unauth = await unary.readEvents({ streamPath: path, fromOffset: 1, limit: 1 }).catch((e: ServiceError) => e);
    expect((unauth as ServiceError).code).toBe(status.UNAUTHENTICATED);
    const denied = await unary.appendEvents({ streamPath: path, events: [userInput("x")] }, outsider.apiKey).catch((e: ServiceError) => e);
    expect((denied as ServiceError).code).toBe(status.PERMISSION_DENIED);
    const invalid = await unary.appendEvents(
      { streamPath: path, events: [userInput("ok"), { type: "agents/context-added", payloadJson: '{"role":"user"}' }] },
      writer.apiKey,
    ).catch((e: ServiceError) => e);
    expect((invalid as ServiceError).code).toBe(status.INVALID_ARGUMENT);
    expect((invalid as ServiceError).metadata.get("agentrt-error-code")).toEqual(["invalid_payload"]);
    const unborn = await unary.appendEvents({ streamPath: path, events: [userInput("to nobody")] }, writer.apiKey).catch((e: ServiceError) => e);
    expect((unborn as ServiceError).code).toBe(status.NOT_FOUND);
    expect((unborn as ServiceError).details).toContain(`no agent at ${path}; create it with \`agents create ${path}\``);
    const badPath = await unary.readEvents({ streamPath: "no-slash", fromOffset: 1, limit: 1 }, writer.apiKey).catch((e: ServiceError) => e);
    expect((badPath as ServiceError).code).toBe(status.INVALID_ARGUMENT);
    // A negative offset or limit is refused naming the field, as HTTP refuses it (it read from offset 1)
    for (const request of [{ fromOffset: -5, limit: 1 }, { fromOffset: 1, limit: -1 }]) {
      const negative = await unary.readEvents({ streamPath: path, ...request }, writer.apiKey).catch((e: ServiceError) => e);
      expect((negative as ServiceError).code).toBe(status.INVALID_ARGUMENT);
      expect((negative as ServiceError).details).toMatch(request.fromOffset < 0 ? /fromOffset/ : /limit/);
    }
    const range = await unary.readEvents({ streamPath: path, fromOffset: 5, limit: 1 }, writer.apiKey).catch((e: ServiceError) => e);
    expect((range as ServiceError).code).toBe(status.OUT_OF_RANGE);
    expect(await ts.store.lastOffset(path)).toBe(0);
    const refused = await new Promise<ServiceError>((resolve) => {
      const stream = client.subscribe({ streamPath: path, fromOffset: 1, ephemeral: false }, md());
      stream.on("data", () => undefined);
      stream.on("error", resolve);
    });
    expect(refused.code).toBe(status.UNAUTHENTICATED);
    const outOfRange = await new Promise<ServiceError>((resolve) => {
      const stream = client.subscribe({ streamPath: path, fromOffset: 9, ephemeral: false }, md(writer.apiKey));
      stream.on("data", () => undefined);
      stream.on("error", resolve);
    });
    expect(outOfRange.code).toBe(status.OUT_OF_RANGE);
  });

  it("holds ListAgents and AppendEvents to the HTTP routes' rules: a bad prefix and a negative expected offset are INVALID_ARGUMENT naming the field; a key that reads nothing is PERMISSION_DENIED", async () => {
    for (const prefix of ["agents/grpc", `/${"a".repeat(600)}`]) {
      const refused = (await unary.listAgents({ prefix }, writer.apiKey).catch((e: ServiceError) => e)) as ServiceError;
      expect(refused.code, prefix.slice(0, 20)).toBe(status.INVALID_ARGUMENT);
      expect(refused.details).toContain("request.prefix");
    }
    const blind = (await unary.listAgents({ prefix: "/agents/grpc" }, appendOnly.apiKey).catch((e: ServiceError) => e)) as ServiceError;
    expect(blind.code).toBe(status.PERMISSION_DENIED);
    expect(blind.details).toBe(`Key ${appendOnly.stored.id} may not read any stream.`);
    const path = "/agents/grpc/negative";
    await ts.store.append(path, [{ type: "agent/created", payload: {} }]);
    const negative = (await unary.appendEvents({ streamPath: path, events: [userInput("x")], expectedLastOffset: -1 }, writer.apiKey).catch((e: ServiceError) => e)) as ServiceError;
    expect(negative.code).toBe(status.INVALID_ARGUMENT);
    expect(negative.details).toContain("request.expectedLastOffset");
    expect(await ts.store.lastOffset(path)).toBe(1);
    expect((await unary.listAgents({}, writer.apiKey)).agents.map((a) => a.streamPath)).toContain(path);
  });

  it("answers a request it cannot decode INVALID_ARGUMENT saying why, not INTERNAL: an int64 past 2^53, wire bytes that are not a message", async () => {
    const huge = (await unary.readEvents({ streamPath: "/agents/grpc/one", fromOffset: 2 ** 60, limit: 1 }, writer.apiKey).catch((e: ServiceError) => e)) as ServiceError;
    expect(huge.code).toBe(status.INVALID_ARGUMENT);
    expect(huge.details).toBe(
      "The request could not be decoded: Value is larger than Number.MAX_SAFE_INTEGER (an integer field is past 2^53 - 1, the largest offset or count this API takes).",
    );
    const stream = await new Promise<ServiceError>((resolve) => {
      const s = client.subscribe({ streamPath: "/agents/grpc/one", fromOffset: 2 ** 60, ephemeral: false }, md(writer.apiKey));
      s.on("data", () => undefined);
      s.on("error", resolve);
    });
    expect(stream.code).toBe(status.INVALID_ARGUMENT);
    const garbage = await new Promise<ServiceError | null>((resolve) => {
      client.makeUnaryRequest(
        "/agentrt.v1.AgentRuntime/ReadEvents",
        () => Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]),
        (b: Buffer) => b,
        {},
        md(writer.apiKey),
        (e) => resolve(e),
      );
    });
    expect(garbage?.code).toBe(status.INVALID_ARGUMENT);
    expect(garbage?.details).toMatch(/^The request could not be decoded: /);
  });

  it("holds CreateAgent to the HTTP route's body rule: a project name of 100 000 characters is INVALID_ARGUMENT naming the field, nothing written", async () => {
    const path = "/agents/grpc/long-project";
    const refused = (await call((cb) => client.createAgent({ streamPath: path, project: "p".repeat(100_000) }, md(writer.apiKey), cb)).catch((e: ServiceError) => e)) as ServiceError;
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details).toContain("request.project");
    expect(await ts.store.lastOffset(path)).toBe(0);
  });

  it("refuses a state over 4 MiB, which a client would refuse after the server built it, naming the HTTP route that sends it in pieces", async () => {
    const path = "/agents/grpc/large";
    await unary.appendEvents({ streamPath: path, events: [{ type: "agent/created", payloadJson: "{}" }] }, writer.apiKey);
    for (let i = 0; i < 10; i++) await unary.appendEvents({ streamPath: path, events: [userInput(`${i}:${"x".repeat(500_000)}`)] }, writer.apiKey);
    const refused = (await unary.getState({ streamPath: path }, writer.apiKey).catch((e: ServiceError) => e)) as ServiceError;
    expect(refused.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(refused.metadata.get("agentrt-error-code")).toEqual(["payload_too_large"]);
    expect(refused.details).toContain(`read it from GET /v1/agents/${encodeURIComponent(path)}/state, which sends it in pieces`);

    // Over HTTP the same state comes in pieces (chunked, no length), the same JSON as the fold.
    const res = await rawGet(`${gw.url}/v1/agents/${encodeURIComponent(path)}/state`, writer.apiKey);
    expect(res.status).toBe(200);
    expect(res.headers["transfer-encoding"]).toBe("chunked");
    expect(res.headers["content-length"]).toBeUndefined();
    const direct = await gw.gateway.api.state(path);
    expect(res.text).toBe(JSON.stringify(direct));
    expect(res.text.length).toBeGreaterThan(5_000_000);
    // What the model saw at a request over that context: refused the same way over gRPC, in pieces over HTTP.
    const requested = (await ts.store.append(path, [{ type: "agent/llm-request-requested", payload: { model: "offline/echo", expiresAt: "2099-01-01T00:00:00.000Z" } }])).events[0]!;
    const rendered = (await call((cb) => client.getRenderedRequest({ streamPath: path, requestOffset: requested.offset }, md(writer.apiKey), cb)).catch((e: ServiceError) => e)) as ServiceError;
    expect(rendered.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(rendered.details).toContain(`read it from GET /v1/agents/${encodeURIComponent(path)}/requests/${requested.offset}`);
    const renderedHttp = await rawGet(`${gw.url}/v1/agents/${encodeURIComponent(path)}/requests/${requested.offset}`, writer.apiKey);
    expect(renderedHttp.status).toBe(200);
    expect(renderedHttp.headers["transfer-encoding"]).toBe("chunked");
    expect(JSON.parse(renderedHttp.text).messages.map((m: { content: string }) => m.content).join("")).toContain(`9:${"x".repeat(500_000)}`);
    // A small state is still one body with its length.
    const small = await rawGet(`${gw.url}/v1/agents/${encodeURIComponent("/agents/grpc/one")}/state`, writer.apiKey);
    expect(small.status).toBe(200);
    expect(Number(small.headers["content-length"])).toBe(Buffer.byteLength(small.text));
  });
});

function rawGet(url: string, apiKey: string): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { authorization: `Bearer ${apiKey}` } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}
