// A real user session against the secured gateway: keys in headers for requests and in the
// query string for the browser-style live streams (SSE and WebSocket), as the UI does it.

import WebSocket from "ws";
import { waitFor } from "@agentrt/testing";

export const enc = encodeURIComponent;

export async function httpJson(base: string, method: string, path: string, options: { headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(options.body === undefined ? {} : { "content-type": "application/json" }), ...options.headers },
    ...(options.body === undefined ? {} : { body: typeof options.body === "string" ? options.body : JSON.stringify(options.body) }),
  });
  const text = await res.text();
  let body: { error?: { code: string; message: string; details: Record<string, unknown> } } & Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // not JSON (e.g. the static UI)
  }
  return { status: res.status, body, text };
}

/** An SSE follower: collects the raw stream text until closed. */
export function followSse(url: string): { text: () => string; status: Promise<number>; close: () => void } {
  const controller = new AbortController();
  let text = "";
  const status = fetch(url, { signal: controller.signal }).then((res) => {
    void (async () => {
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) text += Buffer.from(chunk).toString("utf8");
      } catch {
        // aborted by close()
      }
    })();
    return res.status;
  });
  status.catch(() => {});
  return { text: () => text, status, close: () => controller.abort() };
}

/** A WebSocket follower: collects frames; `opened` settles with the upgrade's outcome. */
export function followWs(url: string): { frames: string[]; opened: Promise<number>; close: () => void } {
  const ws = new WebSocket(url);
  const frames: string[] = [];
  ws.on("message", (data) => frames.push(String(data)));
  const opened = new Promise<number>((resolve) => {
    ws.once("open", () => resolve(101));
    ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    ws.once("error", () => resolve(0));
  });
  return { frames, opened, close: () => ws.terminate() };
}

export async function waitForText(read: () => string, needle: string, timeoutMs: number): Promise<void> {
  await waitFor(() => read().includes(needle), { timeoutMs, intervalMs: 50, what: `"${needle}" on a live stream` });
}
