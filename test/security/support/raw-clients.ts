// Raw clients for the fuzz: bytes on a TCP socket (so a request can be malformed at any layer
// and the connection reset at any moment) and WebSocket frame encoding by hand.

import { connect, type Socket } from "node:net";

export type SocketAction =
  /** Read the response's first bytes, then close normally. */
  | { readonly kind: "read" }
  /** Reset (RST) right after writing. */
  | { readonly kind: "reset-after-write" }
  /** Reset as soon as the first response byte arrives (e.g. mid-refusal of an upgrade). */
  | { readonly kind: "reset-on-response" }
  /** Write a prefix only, wait, then reset (a body upload cut off). */
  | { readonly kind: "partial-then-reset"; readonly bytes: number; readonly waitMs: number }
  /** After a 101, send these frames, read a little, then reset. */
  | { readonly kind: "frames-after-upgrade"; readonly frames: Buffer };

export interface RawResult {
  /** The HTTP status of the response, when one arrived. */
  readonly status: number | null;
  readonly head: string;
}

const STATUS = /^HTTP\/1\.[01] (\d{3})/;

/** Sends `request` and performs `action`; always settles (deadline `deadlineMs`). */
export function rawExchange(port: number, request: Buffer, action: SocketAction, deadlineMs = 1500): Promise<RawResult> {
  return new Promise((resolve) => {
    const socket: Socket = connect({ host: "127.0.0.1", port });
    let received = "";
    let settled = false;
    const finish = (reset: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (reset && !socket.destroyed) socket.resetAndDestroy();
      else socket.destroy();
      const m = STATUS.exec(received);
      resolve({ status: m === null ? null : Number(m[1]), head: received.slice(0, 300) });
    };
    const timer = setTimeout(() => finish(true), deadlineMs);
    socket.on("error", () => finish(false));
    socket.on("close", () => finish(false));
    socket.on("connect", () => {
      if (action.kind === "partial-then-reset") {
        socket.write(request.subarray(0, Math.min(action.bytes, request.length)));
        setTimeout(() => finish(true), action.waitMs);
        return;
      }
      socket.write(request);
      if (action.kind === "reset-after-write") setImmediate(() => finish(true));
    });
    let framesSent = false;
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
      if (action.kind === "reset-on-response") return finish(true);
      if (action.kind === "frames-after-upgrade" && received.startsWith("HTTP/1.1 101") && !framesSent) {
        framesSent = true;
        socket.write(action.frames);
        setTimeout(() => finish(true), 30);
        return;
      }
      if (!framesSent && received.includes("\r\n\r\n")) setTimeout(() => finish(false), 5);
    });
  });
}

/** One WebSocket frame; `mask` as a client must (false makes a protocol violation). */
export function wsFrame(opcode: number, payload: Buffer, options: { mask?: boolean; fin?: boolean; declaredLength?: bigint } = {}): Buffer {
  const mask = options.mask ?? true;
  const first = ((options.fin ?? true) ? 0x80 : 0) | (opcode & 0x0f);
  const length = options.declaredLength ?? BigInt(payload.length);
  let header: Buffer;
  if (length < 126n) header = Buffer.from([first, (mask ? 0x80 : 0) | Number(length)]);
  else if (length < 65536n) {
    header = Buffer.alloc(4);
    header[0] = first;
    header[1] = (mask ? 0x80 : 0) | 126;
    header.writeUInt16BE(Number(length), 2);
  } else {
    header = Buffer.alloc(10);
    header[0] = first;
    header[1] = (mask ? 0x80 : 0) | 127;
    header.writeBigUInt64BE(length, 2);
  }
  if (!mask) return Buffer.concat([header, payload]);
  const key = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  const masked = Buffer.from(payload.map((b, i) => b ^ key[i % 4]!));
  return Buffer.concat([header, key, masked]);
}
