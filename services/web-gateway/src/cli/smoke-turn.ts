// One turn through the gateway's HTTP API, as a client outside the cluster makes it: create an
// agent, send a message, wait for the assistant's reply. The chart's `helm test` hook runs it
// (bundled into the image as bin/smoke-turn.mjs) against the gateway Service, and
// test/image/production-tree.test.ts runs the same bundle against the production tree.
//
//   AGENTRT_URL=http://host:port AGENTRT_API_KEY=agrt_... node bin/smoke-turn.mjs [streamPath]
//   (without a path: SMOKE_PATH_PREFIX, default /agents/smoke, plus a fresh suffix)
// Exits 0 with the reply on stdout, 1 with the reason on stderr.

import { z } from "zod";
import { terminalSafe } from "./terminal-safe.ts";
import { boundedText, MAX_ANSWER_BYTES } from "./gateway-client.ts";

const eventPage = z.object({
  events: z.array(z.object({ offset: z.number(), type: z.string(), payload: z.unknown() })),
  nextOffset: z.number().optional(),
});
const assistantPayload = z.object({ role: z.literal("assistant"), content: z.string() });

export interface SmokeTurnOptions {
  readonly url: string;
  readonly apiKey: string;
  readonly streamPath: string;
  readonly message?: string;
  readonly timeoutMs?: number;
}

export class SmokeTurnError extends Error {
  readonly code = "smoke_turn_failed";
}

async function call(options: SmokeTurnOptions, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${options.url.replace(/\/$/, "")}${path}`, {
    method,
    headers: { authorization: `Bearer ${options.apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  }).catch((error: unknown) => {
    throw new SmokeTurnError(`${method} ${options.url}${path}: ${(error as Error).message}`, { cause: error });
  });
  const text = await boundedText(res, MAX_ANSWER_BYTES, { url: options.url });
  if (!res.ok) throw new SmokeTurnError(`${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}

/** Creates the agent, says hello, and resolves with the assistant's reply. */
export async function smokeTurn(options: SmokeTurnOptions): Promise<string> {
  const encoded = encodeURIComponent(options.streamPath);
  await call(options, "POST", "/v1/agents", { streamPath: options.streamPath });
  const message = options.message ?? "hello from the smoke test";
  await call(options, "POST", `/v1/streams/${encoded}/events`, {
    events: [{ type: "agents/context-added", payload: { role: "user", content: message, actor: { type: "user", origin: "web" } } }],
  });
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let fromOffset = 1;
  while (Date.now() < deadline) {
    const page = eventPage.parse(await call(options, "GET", `/v1/streams/${encoded}/events?fromOffset=${fromOffset}&limit=200`).catch((error: unknown) => {
      // Past the end of the stream: nothing new yet.
      if (error instanceof SmokeTurnError && / 416:/.test(error.message)) return { events: [] };
      throw error;
    }));
    for (const event of page.events) {
      fromOffset = Math.max(fromOffset, event.offset + 1);
      const reply = event.type === "agents/context-added" ? assistantPayload.safeParse(event.payload) : undefined;
      if (reply?.success) return reply.data.content;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new SmokeTurnError(`no assistant reply on ${options.streamPath} within ${options.timeoutMs ?? 60_000} ms`);
}

if (process.argv[1]?.endsWith("smoke-turn.mjs") || process.argv[1]?.endsWith("smoke-turn.ts")) {
  const url = process.env.AGENTRT_URL;
  const apiKey = process.env.AGENTRT_API_KEY;
  if (!url || !apiKey) {
    process.stderr.write("set AGENTRT_URL and AGENTRT_API_KEY\n");
    process.exit(1);
  }
  // A new agent per run, so a repeated `helm test` never finds its stream already written.
  const streamPath = process.argv[2] ?? `${process.env.SMOKE_PATH_PREFIX ?? "/agents/smoke"}/${Date.now().toString(36)}`;
  smokeTurn({ url, apiKey, streamPath, timeoutMs: Number(process.env.SMOKE_TIMEOUT_MS ?? 120_000) }).then(
    (reply) => {
      process.stdout.write(terminalSafe(`${streamPath}: ${reply}\n`));
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`smoke turn failed: ${(error as Error).message}\n`);
      process.exit(1);
    },
  );
}
