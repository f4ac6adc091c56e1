// gRPC over a bare node:http2 client: the fuzz needs to send messages no generated client
// would (bad length prefixes, truncated frames, wrong content types, cancelled streams).

import { connect, constants, type ClientHttp2Session } from "node:http2";

export interface GrpcOutcome {
  /** grpc-status from headers or trailers; null when the stream ended without one. */
  readonly status: number | null;
  readonly message: string | null;
  readonly data: Buffer;
}

export function grpcSession(port: number): ClientHttp2Session {
  const session = connect(`http://127.0.0.1:${port}`);
  session.on("error", () => {});
  return session;
}

/** One unary-style exchange; settles on end, error, cancel or after `deadlineMs`. */
export function grpcExchange(
  session: ClientHttp2Session,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
  options: { cancel?: boolean; deadlineMs?: number } = {},
): Promise<GrpcOutcome> {
  return new Promise((resolve) => {
    let status: number | null = null;
    let message: string | null = null;
    const chunks: Buffer[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL);
      resolve({ status, message, data: Buffer.concat(chunks) });
    };
    const take = (h: Record<string, unknown>) => {
      if (h["grpc-status"] !== undefined) status = Number(h["grpc-status"]);
      if (typeof h["grpc-message"] === "string") message = h["grpc-message"];
    };
    const stream = session.request({ ":method": "POST", ":path": path, ...headers });
    const timer = setTimeout(finish, options.deadlineMs ?? 2000);
    stream.on("response", take);
    stream.on("trailers", take);
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", finish);
    stream.on("close", finish);
    stream.on("error", finish);
    stream.end(body);
    if (options.cancel === true) setImmediate(finish);
  });
}

/** A length-prefixed, uncompressed gRPC message. */
export function grpcFrame(message: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** A server-streaming call kept open: `first` settles with "data" on the first message, else the grpc-status. */
export function grpcOpenStream(session: ClientHttp2Session, path: string, headers: Record<string, string>, body: Buffer): { first: Promise<"data" | number | null>; close: () => void } {
  const stream = session.request({ ":method": "POST", ":path": path, ...headers });
  const first = new Promise<"data" | number | null>((resolve) => {
    const take = (h: Record<string, unknown>) => {
      if (h["grpc-status"] !== undefined) resolve(Number(h["grpc-status"]));
    };
    stream.on("response", take);
    stream.on("trailers", take);
    stream.on("data", () => resolve("data"));
    stream.on("close", () => resolve(null));
    stream.on("error", () => resolve(null));
  });
  stream.end(body);
  return { first, close: () => stream.close(constants.NGHTTP2_CANCEL) };
}

/** A protobuf string field (wire type 2). */
export function pbString(field: number, value: string): Buffer {
  const bytes = Buffer.from(value, "utf8");
  return Buffer.concat([Buffer.from([(field << 3) | 2]), pbVarint(bytes.length), bytes]);
}

/** A protobuf varint field (wire type 0). */
export function pbVarintField(field: number, value: number): Buffer {
  return Buffer.concat([Buffer.from([field << 3]), pbVarint(value)]);
}

function pbVarint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}
