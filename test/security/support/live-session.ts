// A real user session against the secured gateway: keys in headers for requests and in the
// query string for the browser-style live streams (SSE and WebSocket), as the UI does it.

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

export async function waitForText(read: () => string, needle: string, timeoutMs: number): Promise<void> {
  await waitFor(() => read().includes(needle), { timeoutMs, intervalMs: 50, what: `"${needle}" on a live stream` });
}
