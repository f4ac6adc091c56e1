// The one fake model every contender talks to, as its own process: OpenAI Chat Completions
// streaming, 22 tokens at 2 000 tok/s. Each request carries a unique marker (`mk-…`) in its
// newest user message; the process prints `R <marker> <ms>` the moment the whole body has
// arrived, on the machine's monotonic clock (as the runner reads it), so "the model received
// the turn" is exact across processes. A marker starting `mk-slow-` streams at 10 tok/s the
// first time it is seen (the kill-mid-reply turn), and at full speed when a recovered handler
// asks again. It also listens on a Unix socket (piped to the TCP port) for a contender that
// runs in a network namespace with only loopback.
//
//   node --import tsx bench/peers/model.ts SOCKET_PATH   → prints `ready <port>` first

import { createConnection, createServer } from "node:net";
import { rmSync } from "node:fs";
import { startFakeModel, type FakeModelRequest } from "@agentrt/testing";

export const TOKENS = 22;
export const TOKENS_PER_SECOND = 2000;
const MARKER = /mk-[a-z0-9-]+/g;

/** The newest marker in a request body (history holds older ones before it). */
export function markerOf(rawBody: string): string | undefined {
  const all = rawBody.match(MARKER);
  return all?.[all.length - 1];
}

/** The reply text for a marker: the marker, then filler, 22 tokens in all. */
export function replyTokens(marker: string): string[] {
  return [`re:${marker}`, ...Array.from({ length: TOKENS - 1 }, (_, i) => ` t${i}`)];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const socketPath = process.argv[2];
  const seen = new Set<string>();
  const model = await startFakeModel({
    defaultReply: (request: FakeModelRequest) => {
      const marker = markerOf(request.rawBody) ?? "mk-unknown";
      process.stdout.write(`R ${marker} ${request.receivedAtMonotonicMs}\n`);
      const first = !seen.has(marker);
      seen.add(marker);
      return { tokens: replyTokens(marker), tokensPerSecond: marker.startsWith("mk-slow-") && first ? 10 : TOKENS_PER_SECOND, usage: false };
    },
  });
  if (socketPath) {
    rmSync(socketPath, { force: true });
    const bridge = createServer((client) => {
      const upstream = createConnection({ host: "127.0.0.1", port: Number(new URL(model.url).port) });
      upstream.setNoDelay(true);
      client.pipe(upstream).pipe(client);
      const close = () => { client.destroy(); upstream.destroy(); };
      client.on("error", close);
      upstream.on("error", close);
    });
    await new Promise<void>((resolve) => bridge.listen(socketPath, resolve));
  }
  process.stdout.write(`ready ${new URL(model.url).port}\n`);
  process.on("SIGTERM", () => process.exit(0));
}
