// The gRPC face of the gateway: the same GatewayApi operations, the same auth and scope
// checks (credential in the `authorization` metadata), errors mapped by the same table.

import { Metadata, Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall, type ServerWritableStream } from "@grpc/grpc-js";
import type { Logger } from "@agentrt/service-kit";
import { parseStreamPath, type AgentEvent } from "@agentrt/contract";
import type { GatewayApi } from "../api/gateway-api.ts";
import { Authenticator, type Principal } from "../auth/authenticator.ts";
import type { Verb } from "../auth/keys.ts";
import { appendRouteVerb, authorizeAppends } from "../auth/ownership.ts";
import { classifyError, GatewayError } from "../errors.ts";
import { AgentRuntimeService, type AgentRuntimeServer, type Event as PbEvent, type EventInput as PbEventInput } from "../generated/agentrt/v1/gateway.ts";

export function toPbEvent(event: AgentEvent): PbEvent {
  return {
    streamPath: event.streamPath,
    offset: event.offset,
    type: event.type,
    payloadJson: JSON.stringify(event.payload),
    createdAt: event.createdAt,
    idempotencyKey: event.idempotencyKey,
    ephemeral: event.ephemeral === true,
  };
}

function fromPbInput(input: PbEventInput, index: number): Record<string, unknown> {
  let payload: unknown;
  try {
    payload = JSON.parse(input.payloadJson) as unknown;
  } catch (error) {
    throw new GatewayError("invalid_request", `events[${index}].payload_json is not valid JSON: ${(error as Error).message}.`, {
      issues: [{ path: `events[${index}].payload_json`, message: "malformed JSON" }],
    });
  }
  return {
    type: input.type,
    payload,
    ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey }),
    ...(input.ephemeral === undefined ? {} : { ephemeral: input.ephemeral }),
  };
}

function grpcError(error: unknown): { code: number; details: string; metadata: Metadata } {
  const classified = classifyError(error);
  const metadata = new Metadata();
  metadata.set("agentrt-error-code", classified.body.error.code);
  metadata.set("agentrt-error-json", JSON.stringify(classified.body));
  return { code: classified.grpc, details: classified.body.error.message, metadata };
}

export function createGrpcServer(api: GatewayApi, auth: Authenticator, log: Logger): Server {
  const principalOf = (metadata: Metadata): Principal => {
    const raw = metadata.get("authorization")[0];
    const header = typeof raw === "string" ? raw : raw?.toString();
    return auth.authenticate(Authenticator.credentialFrom({ authorization: header, "x-api-key": metadata.get("x-api-key")[0]?.toString() }));
  };
  const guard = (metadata: Metadata, verb: Verb, rawPath: string): string => {
    const principal = principalOf(metadata);
    const path = parseStreamPath(rawPath);
    Authenticator.authorize(principal, verb, path);
    return path;
  };
  const unary =
    <Req, Res>(fn: (call: ServerUnaryCall<Req, Res>) => Promise<Res>) =>
    (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
      fn(call).then(
        (res) => callback(null, res),
        (error: unknown) => {
          const e = grpcError(error);
          if (e.code === 13) log.error({ err: error }, "grpc call failed");
          callback(e);
        },
      );
    };

  const impl: AgentRuntimeServer = {
    createAgent: unary(async (call) => {
      const streamPath = guard(call.metadata, "append", call.request.streamPath);
      const result = await api.createAgent({
        streamPath,
        ...(call.request.promptFile === undefined ? {} : { promptFile: call.request.promptFile }),
        ...(call.request.project === undefined ? {} : { project: call.request.project }),
      });
      return { status: result.status, events: result.events.map(toPbEvent) };
    }),
    appendEvents: unary(async (call) => {
      const events = call.request.events.map(fromPbInput);
      const principal = principalOf(call.metadata);
      const streamPath = parseStreamPath(call.request.streamPath);
      Authenticator.authorize(principal, appendRouteVerb(events), streamPath);
      authorizeAppends(principal, streamPath, events);
      const result = await api.append(streamPath, events, call.request.expectedLastOffset);
      return { status: result.status, events: result.events.map(toPbEvent) };
    }),
    readEvents: unary(async (call) => {
      const streamPath = guard(call.metadata, "read", call.request.streamPath);
      const limit = call.request.limit > 0 ? Math.min(call.request.limit, 1000) : 100;
      const page = await api.read(streamPath, Math.max(1, call.request.fromOffset), limit);
      return { events: page.events.map(toPbEvent), nextOffset: page.nextOffset, lastOffset: page.lastOffset };
    }),
    subscribe: (call: ServerWritableStream<{ streamPath: string; fromOffset: number; ephemeral: boolean }, PbEvent>) => {
      void (async () => {
        try {
          const streamPath = guard(call.metadata, "read", call.request.streamPath);
          const subscription = await api.subscribe(streamPath, Math.max(1, call.request.fromOffset), call.request.ephemeral);
          call.on("cancelled", () => void subscription.close());
          for await (const event of subscription) {
            if (call.cancelled) break;
            if (!call.write(toPbEvent(event))) await new Promise((resolve) => call.once("drain", resolve));
          }
          await subscription.close();
          call.end();
        } catch (error) {
          // grpc-js turns an "error" on a server stream into the call's final status.
          const status = grpcError(error);
          call.emit("error", Object.assign(new Error(status.details), status));
        }
      })();
    },
    getState: unary(async (call) => {
      const streamPath = guard(call.metadata, "read", call.request.streamPath);
      const state = await api.state(streamPath);
      return { streamPath, lastOffset: state.lastOffset, stateJson: JSON.stringify(state.state) };
    }),
    listAgents: unary(async (call) => {
      const principal = principalOf(call.metadata);
      const agents = await api.list(call.request.prefix, (path) => Authenticator.can(principal, "read", path));
      return {
        agents: agents.map((a) => ({
          streamPath: a.streamPath,
          lastOffset: a.lastOffset,
          title: a.title ?? undefined,
          activity: a.activity ?? undefined,
          waitingFor: a.waitingFor ?? undefined,
          openRequestOffset: a.openRequestOffset ?? undefined,
          paused: a.paused,
        })),
      };
    }),
    getRenderedRequest: unary(async (call) => {
      const streamPath = guard(call.metadata, "read", call.request.streamPath);
      if (call.request.requestOffset < 1) {
        throw new GatewayError("invalid_request", "request_offset must be at least 1.", { issues: [{ path: "request_offset", message: "must be >= 1" }] });
      }
      const r = await api.renderedRequest(streamPath, call.request.requestOffset);
      return { ...r, messages: r.messages.map((m) => ({ role: m.role, content: m.content })) };
    }),
  };
  const server = new Server();
  server.addService(AgentRuntimeService, impl);
  return server;
}

export function bindGrpc(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
}
