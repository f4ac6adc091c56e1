// `pnpm agents tail PATH [--from N] [--count N]`: follows a stream live over SSE, printing each
// durable event as one line and the model's reply as it streams (ephemeral chunks). A dropped
// connection is resumed with Last-Event-ID, so no event is lost or printed twice.

import { chunksText, cutShortNote, formatDuration } from "@agentrt/agent-core/display";
import { boundedText, clientEnv, encPath, fetchGateway, GatewayUnreachableError, headers, parseArgs } from "../gateway-client.ts";

/**
 * The longest SSE frame taken (an event is at most 1 MiB of JSON, escapes included far less than
 * this): a server that never ends a frame is an error, not a buffer that grows without end.
 */
export const MAX_SSE_FRAME_CHARS = 8 * 1024 * 1024;

type Out = (text: string) => void;

interface TailEvent {
  offset: number;
  type: string;
  payload: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- summarised per type
  ephemeral?: boolean;
}

export function summarise(e: TailEvent): string {
  const p = e.payload;
  switch (e.type) {
    case "agents/context-added":
      return `${p.role}${p.key ? ` [${p.key}]` : ""}: ${String(p.content).split("\n")[0]!.slice(0, 160)}`;
    case "agent/llm-request-requested":
      return `→ model ${p.model}`;
    case "agent/llm-request-settled": {
      const note = cutShortNote(p.result);
      return `request @${p.requestOffset} ${p.result.status}${typeof p.durationMs === "number" ? ` in ${formatDuration(p.durationMs)}` : ""}${note === undefined ? "" : ` (${note})`}`;
    }
    case "capability-host/script-run-requested":
      return `script ${p.executionId}:\n${String(p.code).replace(/^/gm, "    ")}`;
    case "capability-host/script-run-settled":
      return `script ${p.executionId} ${p.settlement.status}: ${JSON.stringify(p.settlement.status === "succeeded" ? p.settlement.result : p.settlement.error)}`;
    case "agents/web-message-sent":
      return `message: ${p.message}`;
    case "agent/paused":
    case "agent/resumed":
      return `${e.type === "agent/paused" ? "paused" : "resumed"}${p.reason ? `: ${p.reason}` : ""}`;
    case "stream/error-occurred":
      return `ERROR ${p.message}`;
    default:
      return JSON.stringify(p).slice(0, 160);
  }
}

export async function tailCommand(args: readonly string[], out: Out, err: Out): Promise<number> {
  const { positional, flags } = parseArgs(args, ["from", "count"]);
  const [streamPath] = positional;
  if (!streamPath) throw new Error("usage: agents tail PATH [--from OFFSET] [--count N]");
  const env = clientEnv();
  const limit = typeof flags.count === "string" ? Number(flags.count) : Infinity;
  let lastOffset = typeof flags.from === "string" ? Number(flags.from) - 1 : 0;
  let printed = 0;
  let streaming = false;
  let connected = false;
  for (let attempt = 0; printed < limit; attempt++) {
    try {
      const res = await fetchGateway(env, `/v1/streams/${encPath(streamPath)}/subscribe?ephemeral=1&fromOffset=${lastOffset + 1}`, {
        headers: headers(env, { accept: "text/event-stream", ...(lastOffset > 0 ? { "last-event-id": String(lastOffset) } : {}) }),
      });
      if (!res.ok || res.body === null) {
        const body = await boundedText(res, 64 * 1024, env).catch(() => "(an answer too long to show)");
        if (res.status < 500 && res.status !== 429) throw new Error(`subscribe failed: HTTP ${res.status} ${body}`);
        throw Object.assign(new Error(`HTTP ${res.status}`), { retry: true });
      }
      attempt = 0;
      connected = true;
      const decoder = new TextDecoder();
      let buffer = "";
      // Where the search for a frame's end goes on from: not the start of a long frame again for every chunk.
      let searchFrom = 0;
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf("\n\n", searchFrom)) >= 0 && printed < limit) {
          const data = buffer.slice(0, cut).split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
          buffer = buffer.slice(cut + 2);
          searchFrom = 0;
          if (data === "") continue;
          const event = JSON.parse(data) as TailEvent;
          if (event.ephemeral === true) {
            if (event.type === "agent/llm-response-chunks") {
              out(`${streaming ? "" : "  … "}${Array.isArray(event.payload.chunks) ? chunksText(event.payload.chunks) : ""}`);
              streaming = true;
            }
            continue;
          }
          if (event.offset <= lastOffset) continue;
          lastOffset = event.offset;
          if (streaming) out("\n");
          streaming = false;
          out(`@${event.offset} ${event.type}  ${summarise(event)}\n`);
          printed += 1;
        }
        if (printed >= limit) break;
        if (buffer.length > MAX_SSE_FRAME_CHARS) {
          await res.body.cancel().catch(() => undefined);
          throw new Error(`the gateway at ${env.url} sent an event stream frame of more than ${MAX_SSE_FRAME_CHARS} characters (an event is at most 1 MiB); is AGENTRT_URL an agentrt gateway?`);
        }
        searchFrom = Math.max(0, buffer.length - 1);
      }
    } catch (error) {
      // A gateway that never answered is a setup problem (wrong URL, stack not running): say so and stop.
      if (error instanceof GatewayUnreachableError && !connected) throw error;
      if ((error as { retry?: boolean }).retry !== true && !(error instanceof TypeError) && !(error instanceof GatewayUnreachableError)) throw error;
      err(`connection to ${env.url} lost; resuming after @${lastOffset}\n`);
      await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** attempt, 5000)));
    }
  }
  return 0;
}
