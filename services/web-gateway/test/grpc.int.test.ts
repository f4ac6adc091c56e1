// gRPC round trip with the generated ts-proto client: the same operations, scopes and error
// mapping as HTTP, and server streaming for subscribe.
import { credentials, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentRuntimeClient, type AppendEventsResponse, type Event, type GetStateResponse, type ListAgentsResponse, type ReadEventsResponse } from "@agentrt/gateway-proto";
import { openTestStore, type TestStore } from "./support/store.ts";
import { startTestGateway, testKey, type TestGateway } from "./support/gateway-harness.ts";
import { userMessage } from "@agentrt/testing";

const writer = testKey([{ prefix: "/agents/grpc", verbs: ["read", "append"] }]);
const outsider = testKey([{ prefix: "/agents/other", verbs: ["admin"] }]);
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
  gw = await startTestGateway({ store: ts.store, keys: [writer, outsider], grpc: true });
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
});
