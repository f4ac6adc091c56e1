// The fuzz's malformed requests, generated from a seeded PRNG so a failing run can be replayed
// with SECURITY_FUZZ_SEED. Each case is bytes for a raw socket plus what to do with the
// connection (read, reset at once, reset on the first response byte, cut the body off, send
// bad WebSocket frames after an upgrade), or a gRPC call with a bad message.

import type { SocketAction } from "./raw-clients.ts";
import { wsFrame } from "./raw-clients.ts";

import { prng } from "@agentrt/testing";

export { prng };

export interface FuzzContext {
  /** Valid keys (reader, writer, other tenant) and an existing agent the reader may read. */
  readonly keys: { readonly reader: string; readonly writer: string; readonly other: string };
  readonly agentPath: string;
  /** Every invalid key the fuzz presents is recorded here, for the log scan. */
  readonly badKeys: string[];
}

export interface HttpCase {
  readonly kind: "http";
  readonly label: string;
  readonly request: Buffer;
  readonly action: SocketAction;
}

export interface GrpcCase {
  readonly kind: "grpc";
  readonly label: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** Cancel the stream (RST_STREAM) right after sending. */
  readonly cancel: boolean;
}

export type FuzzCase = HttpCase | GrpcCase;

export function caseGenerator(seed: number, ctx: FuzzContext) {
  const r = prng(seed);
  const int = (n: number) => Math.floor(r() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const chance = (p: number) => r() < p;
  const printable = (n: number) => Array.from({ length: n }, () => String.fromCharCode(0x21 + int(94))).join("");
  const rawBytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256)));

  const badKey = (): string => {
    const key = pick([
      () => `agrt_${printable(6).replace(/[^A-Za-z0-9]/g, "x")}_${rawBytes(24).toString("base64url")}`,
      () => `agrt_${ctx.keys.writer.split("_")[1]}_${rawBytes(30).toString("base64url")}`,
      () => `bogus-${rawBytes(18).toString("hex")}`,
    ])();
    ctx.badKeys.push(key);
    return key;
  };
  const anyKey = () => pick([ctx.keys.reader, ctx.keys.writer, ctx.keys.other, badKey()]);
  const enc = encodeURIComponent;

  const segments = () =>
    pick([
      enc(ctx.agentPath),
      enc("/agents/other/x"),
      enc(`${ctx.agentPath}/../../other/x`),
      "%2F",
      "%",
      "%E0%A4%A",
      "%ZZ",
      "..%2f..%2f",
      "",
      "%00",
      enc(`/agents/sec/${"a".repeat(int(3000))}`),
      printable(1 + int(40)).replace(/[?#\s]/g, "_"),
      enc("/agents/sec/\u0000"),
      "%C0%AE%C0%AE",
    ]);
  const query = () => {
    const parts = Array.from({ length: int(4) }, () =>
      pick([
        `fromOffset=${pick(["-1", "0", "abc", "1e99", "99999999999", "1", "2.5", ""])}`,
        `limit=${pick(["0", "100000", "-5", "x", "1000"])}`,
        `ephemeral=${pick(["1", "yes", "true", ""])}`,
        `apiKey=${enc(anyKey())}`,
        `prefix=${pick(["/", "/agents", "%", "x", enc("/".repeat(600))])}`,
        "%%%",
        `${printable(5)}=${printable(5)}`,
      ]),
    );
    return parts.length === 0 ? "" : `?${parts.join("&")}`;
  };
  const target = (): string =>
    pick([
      () => pick(["/%", "/%E0%A4%A", "//", "/..%2f..%2fetc%2fpasswd", "/assets/..%2f..%2f..%2fetc%2fpasswd", "/%00", "/a%00.js", "/assets/app.js", "/index.html", "/", "/%2e%2e/%2e%2e/", "/%c0%ae%c0%ae/", "/assets/%", "/\\..\\..\\"]),
      () => `/${"a/".repeat(1 + int(3000))}`,
      () => `/${printable(1 + int(200)).replace(/[?#\s]/g, "")}`,
      () => `/v1/streams/${segments()}/${pick(["events", "subscribe", "ws", "x", ""])}${query()}`,
      () => `/v1/agents/${segments()}/${pick(["state", `requests/${pick(["1", "0", "-1", "x", "99999999999999999999"])}`, ""])}${query()}`,
      () => `/v1/agents${query()}`,
      () => pick(["/v1//agents", "/v1/agents/", "//v1/agents", "/v1/openapi.json", `/v1/openapi.json?apiKey=${enc(anyKey())}`, "/v1/", "/v1"]),
      () => pick(["*", "http://evil.example/v1/agents", "v1/agents", ""]),
    ])();
  const authHeaders = (): string[] =>
    pick([
      () => [],
      () => [`Authorization: Bearer ${anyKey()}`],
      () => [`X-API-Key: ${anyKey()}`],
      () => ["Authorization: Bearer "],
      () => [`Authorization: Basic ${Buffer.from(`u:${badKey()}`).toString("base64")}`],
      () => [`Authorization: Bearer ${anyKey()}`, `Authorization: Bearer ${anyKey()}`],
      () => [`Cookie: apiKey=${badKey()}`],
    ])();
  const body = (): string | Buffer =>
    pick<() => string | Buffer>([
      () => "",
      () => "{",
      () => `${"[".repeat(100 + int(5000))}${"]".repeat(int(2) === 0 ? 0 : 5000)}`,
      () => `{"events":${"[".repeat(70 + int(3000))}1${"]".repeat(3000)}}`,
      () => JSON.stringify({ events: [{ type: pick(["agents/context-added", "x", "", "llm-request-requested"]), payload: pick([null, 1, "x", {}, { role: "user", content: 5 }]) }] }),
      () => JSON.stringify({ streamPath: pick(["/agents/sec/new", "../x", "", 5]), promptFile: printable(int(100)) }),
      () => JSON.stringify({ events: [] }),
      () => rawBytes(int(400)),
      () => "null",
      () => '"\\ud800"',
      () => JSON.stringify({ __proto__: { polluted: true }, constructor: { prototype: { x: 1 } } }),
    ])();

  const httpCase = (): HttpCase => {
    const method = pick(["GET", "GET", "GET", "POST", "POST", "PUT", "DELETE", "OPTIONS", "HEAD", "PATCH", "BREW", "G\u0000T"]);
    const url = target();
    const version = pick(["HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.1 extra", "HTTX/1.1"]);
    const headers = ["Host: 127.0.0.1", ...authHeaders()];
    if (chance(0.2)) headers.push(`Last-Event-ID: ${pick(["-1", "x", "99999999999999999999", "1", "\u00ff"])}`);
    if (chance(0.1)) headers.push(`X-Long: ${"x".repeat(int(20_000))}`);
    if (chance(0.05)) headers.push(pick(["Bad Header: x", "NoColon", "X-Ctl: a\u0001b", " Leading: space"]));
    let payload: string | Buffer = method === "POST" || chance(0.1) ? body() : "";
    const bodyBuf = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
    if (chance(0.15)) {
      headers.push("Transfer-Encoding: chunked");
      payload = pick([`${bodyBuf.length.toString(16)}\r\n${bodyBuf.toString("latin1")}\r\n0\r\n\r\n`, "zz\r\nabc\r\n", `ffffffff\r\n${bodyBuf.toString("latin1")}`]);
    } else if (bodyBuf.length > 0 || chance(0.1)) {
      headers.push(`Content-Length: ${pick([String(bodyBuf.length), String(bodyBuf.length), "-1", "abc", String(bodyBuf.length + 10), "99999999999"])}`);
      if (chance(0.05)) headers.push("Content-Length: 3");
      payload = bodyBuf;
    }
    if (chance(0.5)) headers.push(pick(["Connection: close", "Connection: keep-alive"]));
    const request = Buffer.concat([Buffer.from(`${method} ${url} ${version}\r\n${headers.join("\r\n")}\r\n\r\n`, "latin1"), typeof payload === "string" ? Buffer.from(payload, "latin1") : payload]);
    const action: SocketAction = pick<SocketAction>([
      { kind: "read" },
      { kind: "read" },
      { kind: "reset-after-write" },
      { kind: "reset-on-response" },
      ...(chance(0.1) ? [{ kind: "partial-then-reset" as const, bytes: int(request.length), waitMs: int(40) }] : []),
    ]);
    return { kind: "http", label: `${method} ${url.slice(0, 80)} (${action.kind})`, request, action };
  };

  const upgradeCase = (): HttpCase => {
    const path = pick([`/v1/streams/${enc(ctx.agentPath)}/ws`, `/v1/streams/${segments()}/ws`, "/v1/agents", "/", "/%"]);
    const key = pick([`?apiKey=${enc(anyKey())}`, `?apiKey=${enc(ctx.keys.reader)}`, "", `?apiKey=${enc(ctx.keys.reader)}&fromOffset=${pick(["1", "0", "x", "999999"])}`]);
    const headers = [
      "Host: 127.0.0.1",
      "Upgrade: websocket",
      "Connection: Upgrade",
      ...(chance(0.9) ? [`Sec-WebSocket-Key: ${pick([rawBytes(16).toString("base64"), "short", ""])}`] : []),
      ...(chance(0.9) ? [`Sec-WebSocket-Version: ${pick(["13", "13", "8", "x"])}`] : []),
      ...authHeaders(),
    ];
    const frames = Buffer.concat(
      Array.from({ length: 1 + int(3) }, () =>
        pick([
          () => wsFrame(0x1, Buffer.from(pick(["not json", "{", '{"type":1}', "\u0000", '{"subscribe":"/agents/other/x"}']))),
          () => wsFrame(0x2, rawBytes(int(64))),
          () => wsFrame(0x1, Buffer.from("x"), { mask: false }),
          () => wsFrame(0x3, Buffer.from("bad opcode")),
          () => wsFrame(0x1, Buffer.from("x"), { declaredLength: 1n << 40n }),
          () => wsFrame(0x1, Buffer.from([0xc3, 0x28])),
          () => wsFrame(0x8, Buffer.from([0x03, 0xe7])),
          () => wsFrame(0x9, rawBytes(200)),
          () => rawBytes(int(50)),
        ])(),
      ),
    );
    const request = Buffer.from(`GET ${path}${key} HTTP/1.1\r\n${headers.join("\r\n")}\r\n\r\n`, "latin1");
    const action: SocketAction = pick<SocketAction>([{ kind: "reset-on-response" }, { kind: "reset-after-write" }, { kind: "frames-after-upgrade", frames }, { kind: "frames-after-upgrade", frames }]);
    return { kind: "http", label: `UPGRADE ${path.slice(0, 60)} (${action.kind})`, request, action };
  };

  const grpcCase = (): GrpcCase => {
    const method = pick(["CreateAgent", "AppendEvents", "ReadEvents", "Subscribe", "GetState", "ListAgents", "GetRenderedRequest", "Nope"]);
    const path = chance(0.9) ? `/agentrt.v1.AgentRuntime/${method}` : pick(["/", "/x/y", `/agentrt.v1.AgentRuntime/${printable(10)}`]);
    const payload = pick([
      () => rawBytes(int(100)),
      () => Buffer.alloc(0),
      // field 1 (stream_path) as a length-delimited string with odd content
      () => Buffer.concat([Buffer.from([0x0a, 20]), Buffer.from(pick(["/agents/sec/../x\u0000ab", "%2Fagents%2Fsec%2Fx!!", "/agents/other/xxxxxxx"]).padEnd(20, "x").slice(0, 20))]),
      // events[0].payload_json nested far too deep (field 2 → EventInput field 2)
      () => {
        const json = Buffer.from(`${"[".repeat(3000)}${"]".repeat(3000)}`);
        const input = Buffer.concat([Buffer.from([0x0a, 1, 0x78, 0x12]), varint(json.length), json]);
        return Buffer.concat([Buffer.from([0x0a, 17]), Buffer.from(ctx.agentPath.padEnd(17, "x").slice(0, 17)), Buffer.from([0x12]), varint(input.length), input]);
      },
      () => Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]),
    ])();
    const compressed = chance(0.05) ? 1 : 0;
    const declared = chance(0.1) ? payload.length + 1 + int(1_000_000) : payload.length;
    const prefix = Buffer.alloc(5);
    prefix[0] = compressed;
    prefix.writeUInt32BE(declared, 1);
    const framed = chance(0.05) ? rawBytes(int(8)) : Buffer.concat([prefix, payload]);
    const headers: Record<string, string> = { "content-type": pick(["application/grpc", "application/grpc", "application/grpc+proto", "text/plain"]), te: "trailers" };
    const auth = authHeaders()[0];
    if (auth !== undefined) {
      const colon = auth.indexOf(":");
      headers[auth.slice(0, colon).toLowerCase()] = auth.slice(colon + 1).trim();
    }
    return { kind: "grpc", label: `gRPC ${path.slice(0, 60)}`, path, headers, body: framed, cancel: chance(0.3) };
  };

  return (): FuzzCase => {
    const x = r();
    if (x < 0.72) return httpCase();
    if (x < 0.85) return upgradeCase();
    return grpcCase();
  };
}

function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n > 0x7f) {
    bytes.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  bytes.push(n);
  return Buffer.from(bytes);
}
