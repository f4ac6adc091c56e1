// The gRPC face of the gateway: the same GatewayApi operations, the same auth and scope
// checks (credential in the `authorization` metadata), errors mapped by the same table, the
// same JSON depth bound on payload_json and the same per-key live-subscription cap.

import { Metadata, Server, ServerCredentials, ServerInterceptingCall, status, type sendUnaryData, type ServerInterceptor, type ServerUnaryCall, type ServerWritableStream } from "@grpc/grpc-js";
import { jsonWithin, type Logger } from "@agentrt/service-kit";
import { z } from "zod";
import { appendBodySchema, createAgentBodySchema, listQuerySchema } from "../api/schemas.ts";
import { parseWith } from "../http/pipeline.ts";
import { parseStreamPath, type AgentEvent } from "@agentrt/contract";
import type { GatewayApi } from "../api/gateway-api.ts";
import { Authenticator, type Principal } from "../auth/authenticator.ts";
import type { Verb } from "../auth/keys.ts";
import { authorizeBatch } from "../auth/grants.ts";
import { appendRouteVerb, authorizeAppends } from "../auth/ownership.ts";
import { classifyError, GatewayError } from "../errors.ts";
import { DEFAULT_MAX_JSON_DEPTH, parseJsonBounded } from "../http/json-limits.ts";
import { LiveSubscriptionLimiter } from "../http/live-limits.ts";
import { capConnections, DEFAULT_MAX_CONNECTIONS } from "../http/connection-cap.ts";
import type { GatewayMetrics } from "../http/gateway-metrics.ts";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";
import { AgentRuntimeService, type AgentRuntimeServer, type Event as PbEvent, type EventInput as PbEventInput } from "@agentrt/gateway-proto";

/** A page of a stream over gRPC: proto3 sends 0 for a field not set, so 0 is allowed; a negative value is not. */
const grpcPageSchema = z.object({ fromOffset: z.number().int().nonnegative(), limit: z.number().int().nonnegative() });

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

function fromPbInput(input: PbEventInput, index: number, maxDepth: number): Record<string, unknown> {
  const payload = parseJsonBounded(input.payloadJson, maxDepth, `events[${index}].payload_json`);
  return {
    type: input.type,
    payload,
    ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey }),
    ...(input.ephemeral === undefined ? {} : { ephemeral: input.ephemeral }),
  };
}

/** JSON with every character outside printable ASCII escaped as \\uXXXX (still the same JSON value). */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function grpcError(error: unknown): { code: number; details: string; metadata: Metadata } {
  const classified = classifyError(error);
  const metadata = new Metadata();
  metadata.set("agentrt-error-code", classified.body.error.code);
  // ASCII metadata takes printable ASCII only, and error messages may quote the caller's input.
  metadata.set("agentrt-error-json", asciiJson(classified.body));
  return { code: classified.grpc, details: classified.body.error.message, metadata };
}

export interface GrpcOptions {
  readonly liveLimiter?: LiveSubscriptionLimiter;
  readonly maxJsonDepth?: number;
  /** The largest state or rendered request sent in one answer; defaults to what clients take by default. */
  readonly maxAnswerBytes?: number;
  /** The largest request message taken, as HTTP's MAX_BODY_BYTES (grpc-js alone takes 4 MiB). */
  readonly maxRequestBytes?: number;
  /** A call whose request has not fully arrived this long after its metadata is ended (as HTTP's REQUEST_TIMEOUT_MS). */
  readonly requestTimeoutMs?: number;
  /** A connection with no call this long is closed (grpc-js alone keeps it for ever). */
  readonly idleConnectionMs?: number;
}

/** Calls one connection may have open at once (grpc-js alone allows any number). */
export const MAX_GRPC_STREAMS_PER_CONNECTION = 100;
export const DEFAULT_GRPC_IDLE_CONNECTION_MS = 60_000;

/** What grpc-js and grpc-go clients take in one message unless told otherwise: 4 MiB. */
export const DEFAULT_MAX_GRPC_ANSWER_BYTES = 4 * 1024 * 1024;

/**
 * An answer that grows with the agent, refused past `maxBytes` (a client would refuse it anyway,
 * after the server had built it), with the HTTP route that sends it in pieces.
 */
function answerTooLarge(what: string, maxBytes: number, httpRoute: string): GatewayError {
  return new GatewayError(
    "payload_too_large",
    `${what} is over ${maxBytes} bytes, more than a gRPC client takes in one message by default; read it from ${httpRoute}, which sends it in pieces.`,
    { maxAnswerBytes: maxBytes, httpRoute },
  );
}


/** `ipv4:127.0.0.1:5000` / `ipv6:[::1]:5000` → the address without the port. */
function peerAddress(peer: string): string {
  return peer.replace(/^ipv[46]:/, "").replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
}

export function createGrpcServer(api: GatewayApi, auth: Authenticator, log: Logger, options: GrpcOptions = {}): Server {
  const maxDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const maxAnswerBytes = options.maxAnswerBytes ?? DEFAULT_MAX_GRPC_ANSWER_BYTES;
  const authenticate = (metadata: Metadata): Principal => {
    const raw = metadata.get("authorization")[0];
    const header = typeof raw === "string" ? raw : raw?.toString();
    return auth.authenticate(Authenticator.credentialFrom({ authorization: header, "x-api-key": metadata.get("x-api-key")[0]?.toString() }));
  };
  // Each call's caller, known from its metadata before its request message is read (authFirst).
  const principals = new WeakMap<Metadata, Principal>();
  // Checked again when used: the message may arrive seconds after the metadata, and a key revoked
  // in between must not act (nor open a Subscribe no revocation would end, red-team).
  const principalOf = (metadata: Metadata): Principal => {
    const known = principals.get(metadata);
    if (known === undefined) return authenticate(metadata);
    auth.assertStillValid(known);
    return known;
  };
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  /**
   * The key is checked, and its rate limit taken, when a call's metadata arrives: a caller with
   * no valid key is answered before its message is read, where grpc-js would first buffer up to
   * the whole message. A request that does not arrive in time ends the call. Without these, calls
   * from nobody, each sending most of a 4 MiB message and never the rest, took a gateway to 3.6 GB.
   */
  const authFirst: ServerInterceptor = (_method, call) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const refuse = (code: number, details: string, metadata = new Metadata()): void => {
      clearTimeout(timer);
      call.sendStatus({ code, details, metadata });
    };
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, pass) => {
            try {
              principals.set(metadata, authenticate(metadata));
            } catch (error) {
              const e = grpcError(error);
              return refuse(e.code, e.details, e.metadata);
            }
            timer = setTimeout(() => refuse(status.DEADLINE_EXCEEDED, `The request message did not arrive within ${requestTimeoutMs} ms of the call's start.`), requestTimeoutMs);
            pass(metadata);
          },
          onReceiveMessage: (message, pass) => {
            clearTimeout(timer);
            pass(message);
          },
          onCancel: () => clearTimeout(timer),
        }),
    });
  };
  const guard = (metadata: Metadata, verb: Verb, rawPath: string): string => {
    const principal = principalOf(metadata);
    const path = parseStreamPath(rawPath);
    Authenticator.authorize(principal, verb, path);
    return path;
  };
  const unary =
    <Req, Res>(fn: (call: ServerUnaryCall<Req, Res>, signal: AbortSignal) => Promise<Res>) =>
    (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
      const undecodable = undecodableRequest(call.request);
      if (undecodable !== undefined) {
        callback(grpcError(undecodable));
        return;
      }
      // A cancelled call (the client went away or gave up) stops the reads done for it.
      const cancelled = new AbortController();
      call.once("cancelled", () => cancelled.abort(new Error("grpc call cancelled")));
      fn(call, cancelled.signal).then(
        (res) => callback(null, res),
        (error: unknown) => {
          if (cancelled.signal.aborted) return;
          const e = grpcError(error);
          if (e.code === 13) log.error({ err: error }, "grpc call failed");
          callback(e);
        },
      );
    };

  const impl: AgentRuntimeServer = {
    createAgent: unary(async (call) => {
      const streamPath = guard(call.metadata, "append", call.request.streamPath);
      // The HTTP route's body rule (a project name of at most 200 characters, a prompt file of at most 200 000).
      const body = parseWith(createAgentBodySchema, {
        streamPath,
        ...(call.request.promptFile === undefined ? {} : { promptFile: call.request.promptFile }),
        ...(call.request.project === undefined ? {} : { project: call.request.project }),
      }, "request");
      const principal = principalOf(call.metadata);
      const result = await api.createAgent(
        {
          streamPath,
          ...(body.promptFile === undefined ? {} : { promptFile: body.promptFile }),
          ...(body.project === undefined ? {} : { project: body.project }),
        },
        Authenticator.reads(principal),
      );
      return { status: result.status, events: result.events.map(toPbEvent) };
    }),
    appendEvents: unary(async (call, signal) => {
      const inputs = call.request.events.map((input, i) => fromPbInput(input, i, maxDepth));
      const principal = principalOf(call.metadata);
      const streamPath = parseStreamPath(call.request.streamPath);
      Authenticator.authorize(principal, appendRouteVerb(inputs), streamPath);
      authorizeAppends(principal, streamPath, inputs);
      // Grants no wider than the key; script requests stamped with the key's scope (auth/grants.ts).
      const events = await authorizeBatch(principal, streamPath, inputs, () => api.grantOf(streamPath, { caller: principal.keyId, signal }));
      // As HTTP's body: a non-negative integer (a negative one was a conflict with a stream "not at -1").
      const { expectedLastOffset } = parseWith(appendBodySchema.pick({ expectedLastOffset: true }), { expectedLastOffset: call.request.expectedLastOffset }, "request");
      const result = await api.append(streamPath, events, expectedLastOffset, Authenticator.reads(principal));
      return { status: result.status, events: result.events.map(toPbEvent) };
    }),
    readEvents: unary(async (call, signal) => {
      const streamPath = guard(call.metadata, "read", call.request.streamPath);
      // 0 is proto3's unset (from the start, the default page); a negative one is refused, as HTTP refuses it.
      const { fromOffset, limit: asked } = parseWith(grpcPageSchema, { fromOffset: call.request.fromOffset, limit: call.request.limit }, "request");
      const limit = asked > 0 ? Math.min(asked, 1000) : 100;
      const page = await api.read(streamPath, Math.max(1, fromOffset), limit, { signal, caller: principalOf(call.metadata).keyId });
      return { events: page.events.map(toPbEvent), nextOffset: page.nextOffset, lastOffset: page.lastOffset };
    }),
    subscribe: (call: ServerWritableStream<{ streamPath: string; fromOffset: number; ephemeral: boolean }, PbEvent>) => {
      let release = () => {};
      // A client that goes away mid-stream must not leave an unhandled stream error behind.
      call.on("error", (error: Error & { code?: number }) => log.debug({ code: error.code }, "grpc subscribe stream error"));
      void (async () => {
        try {
          const undecodable = undecodableRequest(call.request);
          if (undecodable !== undefined) throw undecodable;
          const principal = principalOf(call.metadata);
          const streamPath = parseStreamPath(call.request.streamPath);
          Authenticator.authorize(principal, "read", streamPath);
          let stop = () => release();
          const revoked = () => {
            stop();
            call.emit("error", Object.assign(new Error("The API key this stream was opened with was revoked or changed."), { code: status.UNAUTHENTICATED }));
          };
          if (options.liveLimiter !== undefined) release = options.liveLimiter.acquire(LiveSubscriptionLimiter.holderOf(principal, peerAddress(call.getPeer())), revoked);
          const { fromOffset } = parseWith(grpcPageSchema.pick({ fromOffset: true }), { fromOffset: call.request.fromOffset }, "request");
          const subscription = await api.subscribe(streamPath, Math.max(1, fromOffset), call.request.ephemeral);
          stop = () => {
            release();
            void subscription.close();
          };
          call.on("cancelled", stop);
          call.on("close", stop);
          if (call.cancelled) stop();
          for await (const event of subscription) {
            if (call.cancelled) break;
            if (!call.write(toPbEvent(event))) await new Promise((resolve) => call.once("drain", resolve).once("cancelled", resolve));
          }
          stop();
          call.end();
        } catch (error) {
          release();
          // grpc-js turns an "error" on a server stream into the call's final status.
          const status = grpcError(error);
          call.emit("error", Object.assign(new Error(status.details), status));
        }
      })();
    },
    getState: unary(async (call, signal) => {
      const streamPath = guard(call.metadata, "read", call.request.streamPath);
      const state = await api.state(streamPath, { signal, caller: principalOf(call.metadata).keyId });
      const httpRoute = `GET /v1/agents/${encodeURIComponent(streamPath)}/state`;
      // Built only up to the bound: a state far over it costs the bound's worth of JSON to refuse.
      const stateJson = jsonWithin(state.state, maxAnswerBytes);
      if (stateJson === undefined) throw answerTooLarge(`The state of ${streamPath}`, maxAnswerBytes, httpRoute);
      return { streamPath, lastOffset: state.lastOffset, stateJson };
    }),
    listAgents: unary(async (call, signal) => {
      const principal = principalOf(call.metadata);
      // As HTTP's: the prefix held to the query's rule, and a key that can read nothing refused
      // (it had been answered an empty list).
      const { prefix } = parseWith(listQuerySchema.pick({ prefix: true }), call.request.prefix === undefined || call.request.prefix === "" ? {} : { prefix: call.request.prefix }, "request");
      Authenticator.authorizeListing(principal);
      // The first page only (the proto has no cursor yet); HTTP's `after` pages further.
      const { agents } = await api.list(prefix, Authenticator.reads(principal), { signal, caller: principal.keyId });
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
    getRenderedRequest: unary(async (call, signal) => {
      const streamPath = guard(call.metadata, "read", call.request.streamPath);
      if (call.request.requestOffset < 1) {
        throw new GatewayError("invalid_request", "request_offset must be at least 1.", { issues: [{ path: "request_offset", message: "must be >= 1" }] });
      }
      const r = await api.renderedRequest(streamPath, call.request.requestOffset, { signal, caller: principalOf(call.metadata).keyId });
      const bytes = r.messages.reduce((sum, m) => sum + Buffer.byteLength(m.content) + Buffer.byteLength(m.role), 0);
      if (bytes > maxAnswerBytes) {
        const httpRoute = `GET /v1/agents/${encodeURIComponent(streamPath)}/requests/${call.request.requestOffset}`;
        throw answerTooLarge(`The request at offset ${call.request.requestOffset} of ${streamPath}`, maxAnswerBytes, httpRoute);
      }
      return { ...r, messages: r.messages.map((m) => ({ role: m.role, content: m.content })) };
    }),
  };
  const server = new Server({
    interceptors: [authFirst],
    "grpc.max_receive_message_length": options.maxRequestBytes ?? 1_048_576,
    "grpc.max_concurrent_streams": MAX_GRPC_STREAMS_PER_CONNECTION,
    "grpc.max_connection_idle_ms": options.idleConnectionMs ?? DEFAULT_GRPC_IDLE_CONNECTION_MS,
  });
  server.addService(withTotalDecoders(AgentRuntimeService), impl);
  return server;
}

/** Marks a request the generated decoder could not decode, with why. */
const UNDECODABLE = Symbol("undecodable");

/**
 * The service with each request decoder made total. ts-proto's decoders throw on malformed wire
 * bytes and on an int64 past 2^53 (`from_offset = 2^60`), and grpc-js answers a throwing decoder
 * INTERNAL "Error deserializing request", naming nothing, where HTTP answers 400 naming the field.
 * The failure is handed to the handler instead, which answers INVALID_ARGUMENT saying why.
 */
function withTotalDecoders<S extends Record<string, { requestDeserialize: (value: Buffer) => unknown }>>(service: S): S {
  return Object.fromEntries(
    Object.entries(service).map(([name, method]) => [
      name,
      {
        ...method,
        requestDeserialize: (value: Buffer) => {
          try {
            return withStrictUtf8(() => method.requestDeserialize(value));
          } catch (error) {
            return { [UNDECODABLE]: error instanceof Error ? error.message : String(error) };
          }
        },
      },
    ]),
  ) as S;
}

/**
 * Runs a decoder with string fields decoded strictly: protobuf's reader put U+FFFD where a
 * string's bytes were not UTF-8, and the event stored said what its sender never sent (HTTP
 * answers 400 for such a body). The decoders read the text decoding when they start, and run
 * synchronously, so it is swapped in for this call alone.
 */
function withStrictUtf8<T>(decode: () => T): T {
  const encoding = getTextEncoding();
  configureTextEncoding({ ...encoding, decodeUtf8: (bytes) => strictUtf8.decode(bytes) });
  try {
    return decode();
  } finally {
    configureTextEncoding(encoding);
  }
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function undecodableRequest(request: unknown): GatewayError | undefined {
  const why = typeof request === "object" && request !== null ? (request as { [UNDECODABLE]?: string })[UNDECODABLE] : undefined;
  if (why === undefined) return undefined;
  const hint = /MAX_SAFE_INTEGER/.test(why)
    ? " (an integer field is past 2^53 - 1, the largest offset or count this API takes)"
    : /not valid for encoding utf-8/i.test(why)
      ? " (a string field's bytes are not UTF-8; protobuf strings are UTF-8)"
      : "";
  return new GatewayError("invalid_request", `The request could not be decoded: ${why}${hint}.`, { reason: why });
}

export interface GrpcListener {
  readonly port: number;
  /** Stops accepting; resolves once its connections are gone (`Server.tryShutdown` or `forceShutdown` ends them). */
  close(): Promise<void>;
}

/** How long calls in flight may finish when the gateway stops before they are cancelled. */
export const GRPC_SHUTDOWN_GRACE_MS = 1_000;

/**
 * Stops `server`: calls in flight get `graceMs` to finish, then every one still open is
 * cancelled. A live Subscribe never finishes on its own, so `tryShutdown` alone waited for the
 * process's stop deadline with any client subscribed (its client resumes from its last offset
 * elsewhere, as after any disconnect; HTTP's live streams are cut at once).
 */
export function shutdownGrpc(server: Server, graceMs = GRPC_SHUTDOWN_GRACE_MS): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
}

/** How long a new gRPC connection may take to send HTTP/2's preface (HTTP's HEADERS_TIMEOUT_MS by default). */
export const DEFAULT_GRPC_FIRST_BYTE_MS = 5_000;
/** "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n": what an HTTP/2 client sends first. */
const HTTP2_CLIENT_PREFACE_BYTES = 24;

/**
 * Serves `server` on `host:port` from a listener of our own, whose connections grpc-js takes as
 * injected: grpc-js's own listener has no bound on connections, and ours closes one past
 * `maxConnections` as it arrives (http/connection-cap.ts). A connection that has not sent
 * HTTP/2's preface within `firstByteMs` is closed: it has no HTTP/2 session yet, so grpc-js's
 * idle timeout never ends it, and silent connections would otherwise hold every slot for as long
 * as their client liked (HTTP's headers timeout does the same for its listener).
 */
export function bindGrpc(
  server: Server,
  host: string,
  port: number,
  options: { log: Logger; maxConnections?: number; firstByteMs?: number; metrics?: Pick<GatewayMetrics, "connectionDropped"> },
): Promise<GrpcListener> {
  const injector = server.createConnectionInjector(ServerCredentials.createInsecure());
  const firstByteMs = options.firstByteMs ?? DEFAULT_GRPC_FIRST_BYTE_MS;
  const listener = createNetServer((socket) => {
    // A connection that has sent at least HTTP/2's preface by then has a session, which grpc-js
    // closes once it has no call for a while. (The byte count is the socket handle's, so it
    // counts what Node's HTTP/2 reads from it.)
    const timer = setTimeout(() => {
      if (socket.bytesRead < HTTP2_CLIENT_PREFACE_BYTES) socket.destroy();
    }, firstByteMs);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
    injector.injectConnection(socket);
  });
  capConnections(listener, { max: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS, listener: "grpc", log: options.log, onDrop: () => options.metrics?.connectionDropped("grpc") });
  return new Promise((resolve, reject) => {
    listener.once("error", reject);
    listener.listen(port, host, () => {
      listener.off("error", reject);
      resolve({
        port: (listener.address() as AddressInfo).port,
        close: () => new Promise<void>((done) => listener.close(() => done())),
      });
    });
  });
}
