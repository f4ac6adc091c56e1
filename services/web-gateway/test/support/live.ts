// Live-stream clients for tests: read an SSE response frame by frame, or a WebSocket, until a
// condition holds (with a deadline), then disconnect.
import WebSocket from "ws";

export interface SseFrame {
  readonly id?: string;
  readonly data: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- events asserted in tests
}

export async function collectSse(
  url: string,
  until: (frames: SseFrame[]) => boolean,
  options: { headers?: Record<string, string>; timeoutMs?: number; onFrame?: (frames: SseFrame[]) => void } = {},
): Promise<{ status: number; frames: SseFrame[] }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 10_000);
  const frames: SseFrame[] = [];
  try {
    const res = await fetch(url, { headers: options.headers ?? {}, signal: controller.signal });
    if (res.status !== 200 || res.body === null) return { status: res.status, frames };
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const raw = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const lines = raw.split("\n");
        const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
        if (data === "") continue;
        const id = lines.find((l) => l.startsWith("id: "))?.slice(4);
        frames.push({ ...(id === undefined ? {} : { id }), data: JSON.parse(data) });
        options.onFrame?.(frames);
      }
      if (until(frames)) break;
    }
    return { status: res.status, frames };
  } catch (error) {
    if (controller.signal.aborted) throw new Error(`SSE deadline passed with ${frames.length} frames: ${JSON.stringify(frames.map((f) => f.id))}`);
    throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

export function collectWs(
  url: string,
  until: (events: any[]) => boolean, // eslint-disable-line @typescript-eslint/no-explicit-any
  options: { headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ events: any[]; status?: number }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return new Promise((resolve, reject) => {
    const events: unknown[] = [];
    const ws = new WebSocket(url, { headers: options.headers ?? {} });
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`WebSocket deadline passed with ${events.length} events`));
    }, options.timeoutMs ?? 10_000);
    ws.on("unexpected-response", (_req, res) => {
      clearTimeout(timer);
      resolve({ events, status: res.statusCode });
    });
    ws.on("message", (data) => {
      events.push(JSON.parse(String(data)));
      if (until(events)) {
        clearTimeout(timer);
        ws.close();
        resolve({ events });
      }
    });
    ws.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
